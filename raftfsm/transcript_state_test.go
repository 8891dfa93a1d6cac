package raftfsm_test

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/compactkit/compactkit/internal/transcript"
	"github.com/compactkit/compactkit/raftfsm"
)

// runState runs the commands that keep, compare and restore snapshots and replicas.
func (e *fsmEnv) runState(c *transcript.Command, b *strings.Builder) {
	n := e.n
	switch c.Name {
	case "restore":
		// Replace the state machine by one restored from its snapshot.
		snap := n.snapshot()
		f, err := raftfsm.Restore(bytes.NewReader(snap))
		if err != nil {
			e.error(b, err)
			break
		}
		n.f = f
		fmt.Fprintf(b, "restored; same snapshot: %t", bytes.Equal(snap, n.snapshot()))
	case "mark":
		if c.Has("capture") {
			capt, err := n.f.Capture()
			if err != nil {
				c.Fatalf("%v", err)
			}
			e.marks[e.pos(c, 0)] = func() []byte {
				var buf bytes.Buffer
				if err := capt.Snapshot(&buf); err != nil {
					c.Fatalf("%v", err)
				}
				return buf.Bytes()
			}
			break
		}
		snap := n.snapshot()
		e.marks[e.pos(c, 0)] = func() []byte { return snap }
	case "unchanged":
		if bytes.Equal(e.mark(c, e.pos(c, 0)), n.snapshot()) {
			b.WriteString("unchanged")
		} else {
			b.WriteString("changed")
		}
	case "same":
		if bytes.Equal(e.mark(c, e.pos(c, 0)), e.mark(c, e.pos(c, 1))) {
			b.WriteString("same")
		} else {
			b.WriteString("different")
		}
	case "replica":
		e.replica(c, b)
	case "compare":
		e.compare(b)
	}
}

func (e *fsmEnv) mark(c *transcript.Command, name string) []byte {
	m, ok := e.marks[name]
	if !ok {
		c.Fatalf("no mark %s", name)
	}
	return m()
}
