// Package transcript runs data-driven transcript tests: files of commands,
// each followed by the output it is expected to produce, replayed through
// one handler. It follows the format of etcd-io/raft's interaction tests
// and cockroachdb/datadriven (which pebble's picker tests use), so a file
// reads the same in either:
//
//	# A comment.
//	poll w1 seq=1 slots=2
//	optional input lines
//	----
//	expected output
//
// A command is a name and arguments: a bare word (w1), a key=value pair
// (seq=1) or a key with a list (ids=(a,b,c)). The lines after the command
// and before the "----" separator are its input. The expected output ends
// at the first blank line; an output that contains blank lines is written
// between a doubled separator ("----" twice before, twice after).
//
// Run replays a file: it calls the handler for each command in order, one
// environment for the whole file, and fails the test where an output
// differs from the expected one. With the test flag -rewrite, it writes
// the outputs the handler produced into the file instead, keeping the
// commands and comments, so that a change of behaviour is reviewed as a
// diff of the transcript.
package transcript

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of transcript tests in place")

// Arg is one argument of a command: Key alone for a bare word, Key and
// Vals for key=value (one value) or key=(a,b) (a list).
type Arg struct {
	Key  string
	Vals []string
}

// Command is one command of a transcript.
type Command struct {
	// Pos is the command's file and line, for messages.
	Pos string
	// Name is the command's first word.
	Name string
	// Args are its other words, in order.
	Args []Arg
	// Input is the text between the command line and the separator,
	// without the final newline.
	Input string

	t      testing.TB
	output string // expected output
}

// Fatalf fails the test, naming the command's position.
func (c *Command) Fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s: %s: %s", c.Pos, c.Name, fmt.Sprintf(format, args...))
}

// Positional returns the bare words among the arguments, in order.
func (c *Command) Positional() []string {
	var out []string
	for _, a := range c.Args {
		if a.Vals == nil {
			out = append(out, a.Key)
		}
	}
	return out
}

// Has reports whether the command has the argument key, bare or with values.
func (c *Command) Has(key string) bool {
	_, ok := c.lookup(key)
	return ok
}

func (c *Command) lookup(key string) (Arg, bool) {
	for _, a := range c.Args {
		if a.Key == key {
			return a, true
		}
	}
	return Arg{}, false
}

// Vals returns the values of key (nil if absent).
func (c *Command) Vals(key string) []string {
	a, _ := c.lookup(key)
	return a.Vals
}

// Str returns the single value of key, or def if the command has no key.
func (c *Command) Str(key, def string) string {
	a, ok := c.lookup(key)
	if !ok {
		return def
	}
	if len(a.Vals) != 1 {
		c.Fatalf("%s: want one value, have %q", key, a.Vals)
	}
	return a.Vals[0]
}

// Int returns the integer value of key, or def if the command has no key.
func (c *Command) Int(key string, def int64) int64 {
	s := c.Str(key, "")
	if s == "" && !c.Has(key) {
		return def
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		c.Fatalf("%s: %v", key, err)
	}
	return v
}

// Duration returns the duration value of key, or def if the command has
// no key.
func (c *Command) Duration(key string, def time.Duration) time.Duration {
	if !c.Has(key) {
		return def
	}
	return c.ParseDuration(c.Str(key, ""))
}

// ParseDuration parses s as a time.Duration or fails the test.
func (c *Command) ParseDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		c.Fatalf("%v", err)
	}
	return d
}

// Only fails the test if the command has an argument not in keys: a
// misspelt argument is an error, not a silent default.
func (c *Command) Only(keys ...string) {
	c.t.Helper()
	for _, a := range c.Args {
		if a.Vals != nil && !slices.Contains(keys, a.Key) {
			c.Fatalf("unknown argument %s (want one of %v)", a.Key, keys)
		}
	}
}

// Handler runs one command and returns its output. It may keep state
// across the calls of one file: Run calls it in file order.
type Handler func(c *Command) string

// Walk runs every file matching pattern (filepath.Glob) as a subtest named
// after the file, with a fresh handler from newHandler for each.
func Walk(t *testing.T, pattern string, newHandler func(t *testing.T) Handler) {
	t.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcript matches %s", pattern)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), filepath.Ext(f)), func(t *testing.T) {
			Run(t, f, newHandler(t))
		})
	}
}

// Run replays the transcript at path through h. Each command's output is
// compared with the expected one (trailing spaces and the final newline
// do not count); with -rewrite the file is rewritten with the outputs h
// produced.
func Run(t *testing.T, path string, h Handler) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out, diffs, err := replay(t, path, string(data), h)
	if err != nil {
		t.Fatal(err)
	}
	if *rewrite {
		if out != string(data) {
			if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for _, d := range diffs {
		t.Error(d)
	}
}

// replay runs the commands of a transcript through h and returns the
// transcript with h's outputs, and a message for each output that differs
// from the expected one.
func replay(t testing.TB, path, data string, h Handler) (string, []string, error) {
	blocks, err := parse(path, data)
	if err != nil {
		return "", nil, err
	}
	var out strings.Builder
	var diffs []string
	for _, b := range blocks {
		out.WriteString(b.text)
		if b.cmd == nil {
			continue
		}
		b.cmd.t = t
		got := normalize(h(b.cmd))
		if got != normalize(b.cmd.output) {
			diffs = append(diffs, fmt.Sprintf("%s: %s: output differs\n--- want:\n%s\n--- got:\n%s", b.cmd.Pos, b.cmd.Name, b.cmd.output, got))
		}
		writeOutput(&out, got)
	}
	return strings.TrimRight(out.String(), "\n") + "\n", diffs, nil
}

func normalize(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t")
	}
	return strings.Join(lines, "\n")
}

func writeOutput(b *strings.Builder, out string) {
	if strings.Contains(out, "\n\n") || strings.HasPrefix(out, "\n") {
		b.WriteString("----\n----\n" + out + "\n----\n----\n\n")
		return
	}
	b.WriteString("----\n")
	if out != "" {
		b.WriteString(out + "\n")
	}
	b.WriteString("\n")
}

// block is a piece of a file: text to copy (comments, blank lines, the
// command and its input, up to but not including the separator), and the
// command it ends with, if any.
type block struct {
	text string
	cmd  *Command
}

func parse(path, data string) ([]block, error) {
	lines := strings.Split(data, "\n")
	var blocks []block
	var text strings.Builder
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			text.WriteString(line + "\n")
			continue
		}
		pos := fmt.Sprintf("%s:%d", path, i+1)
		cmd, err := parseCommand(trimmed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pos, err)
		}
		cmd.Pos = pos
		text.WriteString(line + "\n")
		var input []string
		for i++; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
			text.WriteString(lines[i] + "\n")
		}
		if i == len(lines) {
			return nil, fmt.Errorf("%s: no ---- after the command", pos)
		}
		cmd.Input = strings.Join(input, "\n")
		var output []string
		if i+1 < len(lines) && lines[i+1] == "----" {
			// A doubled separator: the output runs to the doubled closing one.
			for i += 2; i < len(lines) && (lines[i] != "----" || i+1 >= len(lines) || lines[i+1] != "----"); i++ {
				output = append(output, lines[i])
			}
			if i >= len(lines) {
				return nil, fmt.Errorf("%s: no closing ----/---- after the output", pos)
			}
			i += 2 // the closing separators; the loop's i++ skips the blank line
			if i < len(lines) && lines[i] != "" {
				i--
			}
		} else {
			for i++; i < len(lines) && lines[i] != ""; i++ {
				output = append(output, lines[i])
			}
		}
		cmd.output = strings.Join(output, "\n")
		blocks = append(blocks, block{text: text.String(), cmd: cmd})
		text.Reset()
	}
	if text.Len() > 0 {
		blocks = append(blocks, block{text: text.String()})
	}
	return blocks, nil
}

// parseCommand splits a command line into its name and arguments.
func parseCommand(line string) (*Command, error) {
	words, err := split(line)
	if err != nil {
		return nil, err
	}
	c := &Command{Name: words[0]}
	for _, w := range words[1:] {
		k, v, ok := strings.Cut(w, "=")
		if !ok {
			c.Args = append(c.Args, Arg{Key: w})
			continue
		}
		if strings.HasPrefix(v, "(") && strings.HasSuffix(v, ")") {
			v = v[1 : len(v)-1]
			vals := []string{}
			if v != "" {
				vals = strings.Split(v, ",")
			}
			c.Args = append(c.Args, Arg{Key: k, Vals: vals})
			continue
		}
		c.Args = append(c.Args, Arg{Key: k, Vals: []string{v}})
	}
	return c, nil
}

// split splits a line at spaces outside parentheses.
func split(line string) ([]string, error) {
	var words []string
	depth, start := 0, -1
	for i, r := range line {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced ) in %q", line)
			}
		case (r == ' ' || r == '\t') && depth == 0:
			if start >= 0 {
				words = append(words, line[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unbalanced ( in %q", line)
	}
	if start >= 0 {
		words = append(words, line[start:])
	}
	return words, nil
}
