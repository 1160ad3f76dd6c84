package cli

import (
	"fmt"
	"io"
	"os"
	"sort"
)

// Exit codes shared by the commands.
const (
	ExitOK      = 0
	ExitFailure = 1 // the command ran and failed
	ExitUsage   = 2 // bad flags, arguments or configuration
)

// Command is one subcommand. Run gets the arguments after its name and
// returns the process exit code.
type Command struct {
	Name    string // empty for the default command
	Summary string
	Run     func(args []string) int
}

// Set is the subcommands of one program.
type Set struct {
	Program string
	Usage   string // one line: how the program is called
	cmds    map[string]Command
}

// NewSet returns an empty set for the named program.
func NewSet(program, usage string) *Set {
	return &Set{Program: program, Usage: usage, cmds: map[string]Command{}}
}

// Register adds c; a second command of the same name panics (a programming
// error caught by any test that starts the program).
func (s *Set) Register(c Command) {
	if _, dup := s.cmds[c.Name]; dup {
		panic(fmt.Sprintf("cli: %s: command %q registered twice", s.Program, c.Name))
	}
	s.cmds[c.Name] = c
}

// Main runs the subcommand named by args[0]; any other arguments go to the
// default command (the one registered with an empty name) when there is one.
func (s *Set) Main(args []string) int {
	if len(args) > 0 {
		if c, ok := s.cmds[args[0]]; ok && args[0] != "" {
			return c.Run(args[1:])
		}
		switch args[0] {
		case "help", "-h", "-help", "--help":
			s.PrintUsage(os.Stdout)
			if c, ok := s.cmds[""]; ok {
				fmt.Fprintln(os.Stdout)
				c.Run([]string{"-h"}) // the default command's own flags
			}
			return ExitOK
		}
	}
	if c, ok := s.cmds[""]; ok {
		return c.Run(args)
	}
	s.PrintUsage(os.Stderr)
	return ExitUsage
}

// PrintUsage lists the subcommands.
func (s *Set) PrintUsage(w io.Writer) {
	fmt.Fprintf(w, "usage: %s\n\ncommands:\n", s.Usage)
	names := make([]string, 0, len(s.cmds))
	for n := range s.cmds {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, s.cmds[n].Summary)
	}
}
