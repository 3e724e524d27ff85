package proc

import (
	"os"
	"strconv"
	"strings"
)

// Member is one live process of a tree.
type Member struct {
	PID  int
	Comm string // the executable's name as /proc/PID/stat gives it (ffmpeg, ffprobe, …)
}

// Tree lists root and its live descendants, found by parent pid in /proc: the service starts
// its tools in process groups of their own, so a group or session would miss them. Zombies
// (ended, not yet reaped) hold no memory and are left out.
func Tree(root int) []Member {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	comm := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may hold spaces and parentheses.
		s := string(b)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(s[closing+1:])
		if len(f) < 2 || f[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		parent[pid], comm[pid] = ppid, s[open+1:closing]
	}
	var out []Member
	for pid := range parent {
		in := pid == root
		for p, hops := parent[pid], 0; !in && p > 1 && hops < 64; p, hops = parent[p], hops+1 {
			in = p == root
		}
		if in {
			out = append(out, Member{PID: pid, Comm: comm[pid]})
		}
	}
	return out
}
