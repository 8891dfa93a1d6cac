package worker_test

import (
	"context"
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/blockmerge"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/worker"
)

// A worker running the host's own block format: each block is a directory
// of objects (blocks/<id>/meta.json and blocks/<id>/data), merged by the
// host's runner. The worker keeps the leases, reports, and deletes the
// replaced blocks whole (PrefixLayout).
func ExampleRunner() {
	store := blockmerge.NewMemStore()
	svc, err := dirCluster() // a leader service over an in-memory log
	if err != nil {
		panic(err)
	}
	if err := ingestDir(svc, store, 4); err != nil { // four blocks of the host's format
		panic(err)
	}

	runner := worker.RunnerFunc(func(ctx context.Context, s blockmerge.Store, plan *ck.JobPlan, token fencing.Token) ([]ck.BlockMeta, error) {
		// Read plan.Sources from s, write the output's objects under
		// ck.ObjectKey(ck.OutputID(plan.Name, token, 0)) + "/", stop
		// when ctx ends, return the output's metadata.
		return dirRunner(ctx, s, plan, token)
	})
	c := &drainedClient{svc: svc, drained: make(chan struct{})}
	w, err := worker.New(c, store, worker.Config{Runner: runner, Layout: blockmerge.PrefixLayout, PollInterval: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	<-c.drained // the state machine has nothing left to do
	cancel()
	if err := <-done; err != nil {
		panic(err)
	}

	var keys []string
	_ = store.List(context.Background(), "", func(k string) error { keys = append(keys, k); return nil })
	view := svc.FSM().Index()
	defer view.Close()
	fmt.Println("live blocks:", len(view.Blocks("", 0)), "objects:", len(keys))
	// Output: live blocks: 2 objects: 4
}
