package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Help is asked for with -h, -help, --help or the word help, on every command and subcommand;
// it prints on stdout and exits 0. A mistake in how a command is called prints the usage on
// stderr and exits 2.

// isHelpArg reports whether a command-line word asks for help.
func isHelpArg(a string) bool {
	return a == "-h" || a == "-help" || a == "--help" || a == "help"
}

// parseFlags parses args with p (parse, parseInterspersed or strictParse) and holds fs's
// messages back until it knows where they go: the usage asked for with -h goes to stdout and
// the command exits 0; the usage after a bad flag goes to stderr with the error (exit 2). A
// lone "help" argument asks for help too ("mediagen video create help"); a command that takes
// free text says the word with "--" ("mediagen speech -- help").
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer, p func(*flag.FlagSet, []string) ([]string, error)) ([]string, error) {
	if len(args) == 1 && args[0] == "help" {
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return nil, flag.ErrHelp
	}
	var held bytes.Buffer
	fs.SetOutput(&held)
	pos, err := p(fs, args)
	fs.SetOutput(stderr)
	out := stderr
	if errors.Is(err, flag.ErrHelp) {
		out = stdout
	}
	_, _ = out.Write(held.Bytes())
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return nil, usageError{err.Error()} // a flag the command does not have, or a bad value
	}
	return pos, err
}

// strictParse is fs.Parse for commands that take no positional arguments after their flags.
func strictParse(fs *flag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return fs.Args(), nil
}

// withUsage makes fs's usage print text before the flags.
func withUsage(fs *flag.FlagSet, text string) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), text)
		fmt.Fprintln(fs.Output(), "\nFlags:")
		fs.PrintDefaults()
	}
}

// adminCommandUsage is the part of adminUsage that describes the command at path: its line
// and the lines continuing it.
func adminCommandUsage(path string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(adminUsage, "\n") {
		switch {
		case line == "  mediagen admin "+path:
			in = true
		case strings.HasPrefix(line, "  mediagen admin "+path+" "):
			// "usage rebuild" is another command than "usage": a lower-case word follows.
			rest := strings.TrimPrefix(line, "  mediagen admin "+path+" ")
			in = rest == "" || rest[0] < 'a' || rest[0] > 'z'
		case in && strings.HasPrefix(line, "      "): // a continuation of the command's line
		default:
			in = false
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if b.Len() == 0 {
		return "mediagen admin " + path
	}
	return "Usage:\n" + strings.TrimRight(b.String(), "\n")
}
