package transport_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/hashicorp/raft"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/examples/transport"
	"github.com/compactkit/compactkit/raftfsm/hraft/hraftnode"
)

// A single raft node serves its Service over HTTP; a client adds blocks,
// polls for a job as a worker would, and queries the index.
func Example() {
	_, trans := raft.NewInmemTransport("")
	node, err := hraftnode.New(hraftnode.Config{ID: "n1", Transport: trans})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer node.Shutdown()
	if err := node.Bootstrap(); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitServing(ctx); err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(transport.NewHandler(node.Service))
	defer srv.Close()

	client, err := transport.NewClient([]string{srv.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	var blocks []ck.BlockMeta
	for i := range 20 { // a full level-0 batch
		t := t0 + int64(i)*int64(time.Second)
		blocks = append(blocks, ck.BlockMeta{
			ID: fmt.Sprintf("seg-%02d", i), Tenant: "acme", MinTime: t, MaxTime: t + int64(time.Second), Size: 100,
			Datasets: []ck.DatasetMeta{{Name: "cpu", Size: 100, Records: 10, MinTime: t, MaxTime: t + int64(time.Second)}},
		})
	}
	if _, err := client.AddBlocks(ctx, blocks); err != nil {
		fmt.Println(err)
		return
	}
	resp, err := client.Poll(ctx, &ck.PollRequest{WorkerID: "worker-1", Seq: 1, FreeSlots: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Jobs[0].Outcome, len(resp.Jobs[0].Plan.Sources), "sources")
	q, err := client.Query(ctx, "acme", t0, t0+int64(time.Hour), nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("read amplification:", q.ReadAmplification)
	// Output:
	// assigned 20 sources
	// read amplification: 20
}
