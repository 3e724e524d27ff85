package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// attacker is what the attacker process is told to do. The attack runs in a process of its
// own at the lowest CPU priority (nice 19): a real attacker's sockets cost the server's
// machine nothing but the server's own work, and on the shared cores of one machine an
// attacker at normal priority measures the competition for the CPU, not the server. The
// kernel's work for a socket's writes is done in the writer's system calls, so it is
// charged to the niced process too.
type attacker struct {
	Mode      string   `json:"mode"`  // "downloads", "headers", "slow-uploads" or "admin"
	Addr      string   `json:"addr"`  // the server, 127.0.0.1:PORT
	Links     []string `json:"links"` // paths and queries of the stored results' links
	Key       string   `json:"key"`
	Stalled   int      `json:"stalled"`
	Uploads   int      `json:"uploads"`
	Headers   int      `json:"headers"`
	Attackers int      `json:"attackers"`
	// UploadAttackers is how many of the addresses the slow uploads come from.
	UploadAttackers int           `json:"upload_attackers"`
	Hold            time.Duration `json:"hold"`
	Ramp            float64       `json:"ramp"` // sockets opened per second
	// Slow uploads (mode "slow-uploads", slow.go).
	PacedUploads   int `json:"paced_uploads"`
	StalledUploads int `json:"stalled_uploads"`
	UploadBytes    int `json:"upload_bytes"`
	UploadRate     int `json:"upload_rate"` // bytes a second
	// Admin slowloris (mode "admin", slow.go).
	AdminAddr      string `json:"admin_addr"`
	AdminSlowloris int    `json:"admin_slowloris"`
	AdminAttackers int    `json:"admin_attackers"`
}

// runAttacker is the attacker process: it runs the attack for Hold, closes everything and
// prints what it saw as JSON.
func runAttacker(spec string, stdout, stderr io.Writer) int {
	var a attacker
	if err := json.Unmarshal([]byte(spec), &a); err != nil {
		fmt.Fprintln(stderr, "bench/conns attacker:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.Hold)
	defer cancel()
	st := &attackStats{}
	switch a.Mode {
	case "downloads":
		a.downloadAttack(ctx, st)
	case "headers":
		a.headerAttack(ctx, st)
	case "slow-uploads":
		a.slowUploadAttack(ctx, st)
	case "admin":
		a.adminSlowlorisAttack(ctx, st)
	default:
		fmt.Fprintf(stderr, "bench/conns attacker: unknown mode %q\n", a.Mode)
		return 2
	}
	if err := json.NewEncoder(stdout).Encode(st); err != nil {
		return 1
	}
	return 0
}

// attackGrace is how long after its phase the attacker process may take to close its sockets
// and report before it is killed.
const attackGrace = 30 * time.Second

// attack runs the attacker process for one phase and fills st from its report.
func (b *bench) attack(phase context.Context, mode string, st *attackStats) {
	spec, _ := json.Marshal(attacker{Mode: mode, Addr: b.addr, Links: b.links, Key: b.key, Stalled: b.o.stalled,
		Uploads: b.o.uploads, Headers: b.o.headers, Attackers: b.o.attackers, UploadAttackers: b.o.uploadAttackers, Hold: b.o.hold, Ramp: b.o.ramp,
		PacedUploads: b.o.pacedUploads, StalledUploads: b.o.stalledUploads, UploadBytes: b.o.uploadBytes, UploadRate: b.o.uploadRate,
		AdminAddr: b.adminAddr, AdminSlowloris: b.o.adminSlowloris, AdminAttackers: b.o.adminAttackers})
	self, err := os.Executable()
	if err != nil {
		st.fail(err)
		return
	}
	args := []string{self, "-attacker", string(spec)}
	if nice, err := exec.LookPath("nice"); err == nil {
		args = append([]string{nice, "-n", "19"}, args...)
	} else {
		b.logf("no nice command: the attackers run at normal priority")
	}
	cmd := exec.Command(args[0], args[1:]...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, b.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		st.fail(err)
		return
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-phase.Done():
		select {
		case err = <-done:
		case <-time.After(attackGrace):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			err = <-done
		}
	}
	if err != nil {
		st.fail(fmt.Errorf("attacker process: %w", err))
		return
	}
	if err := json.Unmarshal(out.Bytes(), st); err != nil {
		st.fail(fmt.Errorf("attacker report: %w", err))
	}
}
