package transcript

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// echo prints its command back, one argument a line, then its input.
func echo(c *Command) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name=%s", c.Name)
	for _, a := range c.Args {
		fmt.Fprintf(&b, "\n%s %q", a.Key, a.Vals)
	}
	if c.Input != "" {
		b.WriteString("\ninput:\n" + c.Input)
	}
	if c.Has("leading") {
		return "\nafter a leading blank line"
	}
	if c.Has("blank") {
		b.WriteString("\n\nafter a blank line")
	}
	return b.String()
}

func TestEcho(t *testing.T) { Run(t, "testdata/echo.txt", echo) }

func TestParseErrors(t *testing.T) {
	for _, bad := range []string{"cmd\n", "cmd a=(b\n----\n", "cmd\n----\n----\nout\n"} {
		if _, err := parse("x", bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// A transcript fails where an output differs, and its rewrite is the
// transcript it should be.
func TestReplayFailsAndRewrites(t *testing.T) {
	orig, err := os.ReadFile("testdata/echo.txt")
	if err != nil {
		t.Fatal(err)
	}
	broken := strings.Replace(string(orig), "slots [\"2\"]", "slots [\"3\"]", 1)
	broken = strings.Replace(broken, "after a blank line", "after two blank lines", 1)
	out, diffs, err := replay(t, "x.txt", broken, echo)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 2 || !strings.Contains(diffs[0], "x.txt:3: poll") || !strings.Contains(diffs[1], "x.txt:25: echo") {
		t.Errorf("diffs: %q", diffs)
	}
	if out != string(orig) {
		t.Errorf("rewritten:\n%s\n--- want:\n%s", out, orig)
	}
	out, diffs, err = replay(t, "x.txt", string(orig), echo)
	if err != nil || len(diffs) != 0 || out != string(orig) {
		t.Errorf("unchanged transcript: %v %q", err, diffs)
	}
}

func TestArgs(t *testing.T) {
	c, err := parseCommand("poll w1 seq=7 d=16s ids=(a,b)")
	if err != nil {
		t.Fatal(err)
	}
	c.t = t
	if got := c.Positional(); len(got) != 1 || got[0] != "w1" {
		t.Errorf("positional %q", got)
	}
	if c.Int("seq", 0) != 7 || c.Int("slots", 3) != 3 || c.Duration("d", 0).String() != "16s" || c.Str("x", "def") != "def" {
		t.Error("values")
	}
	if v := c.Vals("ids"); len(v) != 2 || v[1] != "b" {
		t.Errorf("ids %q", v)
	}
}
