package rpc

import (
	"errors"
	"time"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/index"
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
	pb "github.com/compactkit/compactkit/rpc/gen/compactkit/v1"
)

// The conversions between the vocabulary's Go types and the protocol's
// messages check nothing: the leader validates the Go value, once. An
// enum value outside the Go type's range becomes the type's zero value,
// which no Validate accepts, so that an unknown value is refused rather
// than truncated into a known one.

// enumToGo returns v as a uint8-based Go enum, or 0 if it does not fit.
func enumToGo[T ~uint8, E ~int32](v E) T {
	if v < 0 || v > 255 {
		return 0
	}
	return T(v)
}

// fromPB converts the messages ms, nil for none.
func fromPB[M, T any](ms []M, f func(M) T) []T {
	if len(ms) == 0 {
		return nil
	}
	out := make([]T, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

// toPB converts the Go values vs, nil for none.
func toPB[V, M any](vs []V, f func(*V) M) []M {
	if len(vs) == 0 {
		return nil
	}
	out := make([]M, len(vs))
	for i := range vs {
		out[i] = f(&vs[i])
	}
	return out
}

func pollRequestToGo(m *pb.PollRequest) *ck.PollRequest {
	return &ck.PollRequest{WorkerID: m.GetWorkerId(), Seq: m.GetSeq(), FreeSlots: m.GetFreeSlots(),
		Updates: fromPB(m.GetUpdates(), func(u *pb.StatusUpdate) ck.StatusUpdate {
			return ck.StatusUpdate{
				Job:       u.GetJob(),
				Token:     fencing.Token(u.GetToken()),
				Status:    enumToGo[ck.ReportStatus](u.GetStatus()),
				Outputs:   blocksToGo(u.GetOutputs()),
				Reason:    u.GetReason(),
				Signature: u.GetSignature(),
			}
		})}
}

func pollRequestToPB(r *ck.PollRequest) *pb.PollRequest {
	return &pb.PollRequest{WorkerId: r.WorkerID, Seq: r.Seq, FreeSlots: r.FreeSlots,
		Updates: toPB(r.Updates, func(u *ck.StatusUpdate) *pb.StatusUpdate {
			return &pb.StatusUpdate{
				Job:       u.Job,
				Token:     uint64(u.Token),
				Status:    pb.ReportStatus(u.Status),
				Outputs:   blocksToPB(u.Outputs),
				Reason:    u.Reason,
				Signature: u.Signature,
			}
		})}
}

func pollResponseToGo(m *pb.PollResponse) *ck.PollResponse {
	return &ck.PollResponse{Jobs: fromPB(m.GetJobs(), func(j *pb.JobReply) ck.JobReply {
		return ck.JobReply{
			Job:       j.GetJob(),
			Outcome:   enumToGo[ck.Outcome](j.GetOutcome()),
			Token:     fencing.Token(j.GetToken()),
			Deadline:  j.GetDeadline(),
			Lease:     time.Duration(j.GetLease()),
			Plan:      planToGo(j.GetPlan()),
			Signature: j.GetSignature(),
		}
	})}
}

func pollResponseToPB(r *ck.PollResponse) *pb.PollResponse {
	return &pb.PollResponse{Jobs: toPB(r.Jobs, func(j *ck.JobReply) *pb.JobReply {
		return &pb.JobReply{
			Job:       j.Job,
			Outcome:   pb.Outcome(j.Outcome),
			Token:     uint64(j.Token),
			Deadline:  j.Deadline,
			Lease:     int64(j.Lease),
			Plan:      planToPB(j.Plan),
			Signature: j.Signature,
		}
	})}
}

func planToGo(m *pb.JobPlan) *ck.JobPlan {
	if m == nil {
		return nil
	}
	return &ck.JobPlan{Name: m.GetName(), Tenant: m.GetTenant(), Shard: m.GetShard(), Level: m.GetLevel(), Sources: m.GetSources(),
		Tombstones: fromPB(m.GetTombstones(), func(t *pb.Tombstone) ck.Tombstone {
			return ck.Tombstone{Kind: enumToGo[ck.TombstoneKind](t.GetKind()), Target: t.GetTarget()}
		})}
}

func planToPB(p *ck.JobPlan) *pb.JobPlan {
	if p == nil {
		return nil
	}
	return &pb.JobPlan{Name: p.Name, Tenant: p.Tenant, Shard: p.Shard, Level: p.Level, Sources: p.Sources,
		Tombstones: toPB(p.Tombstones, func(t *ck.Tombstone) *pb.Tombstone {
			return &pb.Tombstone{Kind: pb.TombstoneKind(t.Kind), Target: t.Target}
		})}
}

func blocksToGo(ms []*pb.BlockMeta) []ck.BlockMeta {
	return fromPB(ms, func(m *pb.BlockMeta) ck.BlockMeta {
		return ck.BlockMeta{
			ID: m.GetId(), Tenant: m.GetTenant(), Shard: m.GetShard(), Level: m.GetLevel(),
			MinTime: m.GetMinTime(), MaxTime: m.GetMaxTime(), Size: m.GetSize(),
			Datasets: fromPB(m.GetDatasets(), func(d *pb.DatasetMeta) ck.DatasetMeta {
				return ck.DatasetMeta{
					Tenant: d.GetTenant(), Name: d.GetName(), Size: d.GetSize(), Records: d.GetRecords(),
					MinTime: d.GetMinTime(), MaxTime: d.GetMaxTime(),
				}
			}),
		}
	})
}

func blocksToPB(bs []ck.BlockMeta) []*pb.BlockMeta {
	return toPB(bs, func(b *ck.BlockMeta) *pb.BlockMeta {
		return &pb.BlockMeta{
			Id: b.ID, Tenant: b.Tenant, Shard: b.Shard, Level: b.Level,
			MinTime: b.MinTime, MaxTime: b.MaxTime, Size: b.Size,
			Datasets: toPB(b.Datasets, func(d *ck.DatasetMeta) *pb.DatasetMeta {
				return &pb.DatasetMeta{
					Tenant: d.Tenant, Name: d.Name, Size: d.Size, Records: d.Records,
					MinTime: d.MinTime, MaxTime: d.MaxTime,
				}
			}),
		}
	})
}

// blockResultsToPB converts the results of an AddBlocks call.
func blockResultsToPB(rs []raftfsm.BlockResult) []*pb.BlockResult {
	out := make([]*pb.BlockResult, len(rs))
	for i, r := range rs {
		m := &pb.BlockResult{Id: r.ID, Disposition: pb.BlockDisposition_BLOCK_DISPOSITION_ADDED, Queued: r.Queued, Pressure: pb.Grade(r.Pressure)}
		if r.Err != nil {
			m.Disposition = pb.BlockDisposition_BLOCK_DISPOSITION_REFUSED
			if errors.Is(r.Err, index.ErrDuplicate) {
				m.Disposition = pb.BlockDisposition_BLOCK_DISPOSITION_DUPLICATE
			}
			m.Error = r.Err.Error()
		}
		out[i] = m
	}
	return out
}

// blockResultsToGo converts the results of an AddBlocks call back: a
// refused block's error carries the leader's message, and a duplicate's
// wraps index.ErrDuplicate.
func blockResultsToGo(ms []*pb.BlockResult) []raftfsm.BlockResult {
	out := make([]raftfsm.BlockResult, len(ms))
	for i, m := range ms {
		r := raftfsm.BlockResult{ID: m.GetId(), Queued: m.GetQueued(), Pressure: enumToGo[policy.Grade](m.GetPressure())}
		if d := m.GetDisposition(); d != pb.BlockDisposition_BLOCK_DISPOSITION_ADDED {
			r.Err = &blockError{msg: m.GetError(), dup: d == pb.BlockDisposition_BLOCK_DISPOSITION_DUPLICATE}
		}
		out[i] = r
	}
	return out
}

// blockError is why the leader refused a block, as the client returns it.
type blockError struct {
	msg string
	dup bool
}

func (e *blockError) Error() string { return e.msg }

// Unwrap returns index.ErrDuplicate for a duplicate.
func (e *blockError) Unwrap() error {
	if e.dup {
		return index.ErrDuplicate
	}
	return nil
}

// statsToPB summarises the state machine's statistics.
func statsToPB(s *raftfsm.Stats) *pb.GetStatsResponse {
	m := &pb.GetStatsResponse{
		LastApplied: s.LastApplied, Term: s.Term, Now: s.Now, ClusterVersion: uint32(s.ClusterVersion),
		Workers: int64(s.Workers), Jobs: int64(s.Scheduler.Jobs), Blocks: s.Index.Blocks, Bytes: s.Index.Bytes,
	}
	if s.Failed != nil {
		m.Failed = s.Failed.Error()
	}
	for _, l := range s.Planner.Levels {
		m.Levels = append(m.Levels, &pb.LevelStats{
			Level: l.Level, Queued: int64(l.Queued), Lag: int64(l.Lag), Debt: l.Debt, Claimed: int64(l.Claimed),
		})
	}
	return m
}
