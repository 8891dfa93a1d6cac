package leader

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	ck "github.com/compactkit/compactkit"
)

// TokenKey is a secret the leaders sign assignments with (see
// [WithTokenKeys]). Keys live only in the leaders' configuration: never in
// the replicated state, the log, the poll log or snapshots.
type TokenKey struct {
	// ID names the key in every signature it makes (1 to 64 bytes), so
	// that a leader knows which key to verify with.
	ID string
	// Secret is the HMAC-SHA256 key; at least 32 bytes.
	Secret []byte
	// NotAfter ends the key's grace period: after it (by the leader's
	// clock) its signatures are no longer accepted. Zero means no end.
	// Set it on the previous key while rotating.
	NotAfter time.Time
}

// WithTokenKeys makes the service sign tokens, for networks where a
// client could present a job's token (a log index, public and easy to
// guess) without having been assigned the job. Every assignment's reply
// carries a signature of (job, token, worker ID) by keys[0]; the worker
// returns it with every report on the job (worker.Worker does), and a
// report whose signature no key verifies never becomes a change: the
// service answers it "no lease", and the worker stops working on it.
//
// Rotation: add the new key first and keep the previous one, with a
// NotAfter at least one lease duration ahead, on every leader; once that
// time has passed, drop it. Every leader must hold the same keys, so that
// a leader change accepts every token the previous leader signed.
//
// Enabling signing on a cluster with jobs in progress answers their
// unsigned reports "no lease": their attempts are abandoned once and
// reassigned when their leases run out. Without keys (the default) the
// service signs and checks nothing.
//
// It panics on invalid keys (an empty list, an ID of the wrong length, a
// short secret or two keys of one ID): they are the host's configuration.
func WithTokenKeys(keys ...TokenKey) Option {
	ks := make([]TokenKey, len(keys))
	copy(ks, keys)
	if err := validKeys(ks); err != nil {
		panic(err)
	}
	return func(o *options) { o.keys = ks }
}

func validKeys(keys []TokenKey) error {
	if len(keys) == 0 {
		return fmt.Errorf("leader: token keys: none given")
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if len(k.ID) < 1 || len(k.ID) > 64 || len(k.Secret) < 32 || seen[k.ID] {
			return fmt.Errorf("leader: token key %q: want a unique ID of 1 to 64 bytes and a secret of at least 32 bytes", k.ID)
		}
		seen[k.ID] = true
	}
	return nil
}

// sign returns the signature of (job, token, worker) by k:
// [len(ID)] ID HMAC-SHA256(job 0x00 token worker).
func (k *TokenKey) sign(job string, token uint64, worker string) []byte {
	m := hmac.New(sha256.New, k.Secret)
	m.Write([]byte(job))
	m.Write([]byte{0})
	var t [8]byte
	binary.BigEndian.PutUint64(t[:], token)
	m.Write(t[:])
	m.Write([]byte(worker))
	sig := make([]byte, 0, 1+len(k.ID)+sha256.Size)
	sig = append(sig, byte(len(k.ID)))
	sig = append(sig, k.ID...)
	return m.Sum(sig)
}

// verifySignature reports whether sig is a signature of (job, token, worker) by a
// key still in its grace period at now.
func verifySignature(keys []TokenKey, sig []byte, job string, token uint64, worker string, now time.Time) bool {
	if len(sig) < 1 || len(sig) != 1+int(sig[0])+sha256.Size {
		return false
	}
	id := string(sig[1 : 1+int(sig[0])])
	for i := range keys {
		k := &keys[i]
		if k.ID != id {
			continue
		}
		if !k.NotAfter.IsZero() && now.After(k.NotAfter) {
			return false
		}
		return hmac.Equal(sig, k.sign(job, token, worker))
	}
	return false
}

// checkSignatures returns req without the updates whose signature no key
// verifies, and those updates' jobs. Without keys it returns req.
func (s *Service) checkSignatures(req *ck.PollRequest) (*ck.PollRequest, []string) {
	if s.o.keys == nil {
		return req, nil
	}
	now := s.o.clock()
	var (
		kept   []ck.StatusUpdate
		forged []string
	)
	for i := range req.Updates {
		u := &req.Updates[i]
		if verifySignature(s.o.keys, u.Signature, u.Job, uint64(u.Token), req.WorkerID, now) {
			kept = append(kept, *u)
		} else {
			forged = append(forged, u.Job)
		}
	}
	if forged == nil {
		return req, nil
	}
	s.o.log.Warn("leader: reports without a valid token signature answered 'no lease'",
		"worker", ck.PublicWorkerName(req.WorkerID), "seq", req.Seq, "jobs", forged)
	c := *req
	c.Updates = kept
	return &c, forged
}

// signResponse returns a copy of resp (which may be the poll log's) with
// every assignment signed and a "no lease" reply for every job whose
// report was dropped. Without keys it returns resp.
func (s *Service) signResponse(resp *ck.PollResponse, worker string, forged []string) *ck.PollResponse {
	if s.o.keys == nil {
		return resp
	}
	out := &ck.PollResponse{Jobs: make([]ck.JobReply, 0, len(resp.Jobs)+len(forged))}
	for _, r := range resp.Jobs {
		if r.Outcome == ck.OutcomeAssigned {
			r.Signature = s.o.keys[0].sign(r.Job, uint64(r.Token), worker)
		}
		out.Jobs = append(out.Jobs, r)
	}
	for _, job := range forged {
		out.Jobs = append(out.Jobs, ck.JobReply{Job: job, Outcome: ck.OutcomeNoLease})
	}
	return out
}
