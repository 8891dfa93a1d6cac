package compactkittest_test

import (
	"fmt"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/raftfsm"
)

// A host's own property draws blocks of its tenants and a fleet's polls
// against its state machine; here one draw of each, outside a test.
func Example() {
	f, err := raftfsm.New(raftfsm.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	blocks := compactkittest.Blocks(compactkittest.Space{Tenants: []string{"acme"}, Shards: []uint32{1}}, 2, 2).Example(1)
	data, err := f.Encode(&raftfsm.Command{AddBlocks: &raftfsm.AddBlocks{Blocks: blocks}}, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := f.Apply(ck.Entry{Index: 1, Term: 1}, data)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("blocks added:", len(res.Blocks), res.Blocks[0].Err == nil && res.Blocks[1].Err == nil)

	fleet := compactkittest.NewFleet("worker-1")
	req := fleet.Poll(f).Example(1)
	_, err = f.Prepare(req, 2)
	fmt.Println("poll:", req.WorkerID, req.Seq, err)
	// Output:
	// blocks added: 2 true
	// poll: worker-1 1 <nil>
}
