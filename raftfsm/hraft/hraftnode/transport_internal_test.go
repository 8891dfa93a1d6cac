package hraftnode

import (
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// The node's TCP transport refuses to pipeline: raft replicates one append
// at a time instead of through the pipeline that can deadlock.
func TestTCPTransportDoesNotPipeline(t *testing.T) {
	tr, err := newTCPTransport("127.0.0.1:0", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	p, err := tr.AppendEntriesPipeline("peer", tr.LocalAddr())
	if !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		if p != nil {
			p.Close()
		}
		t.Fatalf("AppendEntriesPipeline: %v, want %v", err, raft.ErrPipelineReplicationNotSupported)
	}
}
