package raftfsm

import (
	"cmp"
	"slices"

	"github.com/google/btree"

	ck "github.com/compactkit/compactkit"
)

// pollRecord is the last poll the state machine answered for one worker.
type pollRecord struct {
	_        struct{} `cbor:",toarray"`
	Worker   string
	Seq      uint64
	LastSeen int64
	Response ck.PollResponse
}

// pollLog records, per worker, the response to its latest request, so a
// retried request (same worker ID and sequence) gets the recorded response
// and acts on nothing. A record expires deterministically once the worker
// has been silent (in log time) for the configured TTL.
type pollLog struct {
	byWorker map[string]*pollRecord
	bySeen   *btree.BTreeG[*pollRecord] // ordered by (LastSeen, Worker)
}

func lessSeen(a, b *pollRecord) bool {
	if a.LastSeen != b.LastSeen {
		return a.LastSeen < b.LastSeen
	}
	return a.Worker < b.Worker
}

func newPollLog() *pollLog {
	return &pollLog{byWorker: map[string]*pollRecord{}, bySeen: btree.NewG(16, lessSeen)}
}

// lookup returns the worker's record.
func (l *pollLog) lookup(worker string) (*pollRecord, bool) {
	r, ok := l.byWorker[worker]
	return r, ok
}

// record stores the response to (worker, seq) seen at now.
func (l *pollLog) record(worker string, seq uint64, now int64, resp ck.PollResponse) {
	if old, ok := l.byWorker[worker]; ok {
		l.bySeen.Delete(old)
	}
	r := &pollRecord{Worker: worker, Seq: seq, LastSeen: now, Response: resp}
	l.byWorker[worker] = r
	l.bySeen.ReplaceOrInsert(r)
}

// expire forgets workers last seen at or before cutoff.
func (l *pollLog) expire(cutoff int64) {
	for {
		r, ok := l.bySeen.Min()
		if !ok || r.LastSeen > cutoff {
			return
		}
		l.bySeen.DeleteMin()
		delete(l.byWorker, r.Worker)
	}
}

// records returns every record sorted by worker (snapshot order).
func (l *pollLog) records() []*pollRecord {
	out := make([]*pollRecord, 0, len(l.byWorker))
	for _, r := range l.byWorker {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *pollRecord) int { return cmp.Compare(a.Worker, b.Worker) })
	return out
}

func (l *pollLog) len() int { return len(l.byWorker) }
