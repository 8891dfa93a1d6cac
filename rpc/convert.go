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

func pollRequestToGo(m *pb.PollRequest) *ck.PollRequest {
	r := &ck.PollRequest{WorkerID: m.GetWorkerId(), Seq: m.GetSeq(), FreeSlots: m.GetFreeSlots()}
	if us := m.GetUpdates(); len(us) > 0 {
		r.Updates = make([]ck.StatusUpdate, len(us))
		for i, u := range us {
			r.Updates[i] = ck.StatusUpdate{
				Job:       u.GetJob(),
				Token:     fencing.Token(u.GetToken()),
				Status:    enumToGo[ck.ReportStatus](u.GetStatus()),
				Outputs:   blocksToGo(u.GetOutputs()),
				Reason:    u.GetReason(),
				Signature: u.GetSignature(),
			}
		}
	}
	return r
}

func pollRequestToPB(r *ck.PollRequest) *pb.PollRequest {
	m := &pb.PollRequest{WorkerId: r.WorkerID, Seq: r.Seq, FreeSlots: r.FreeSlots}
	if len(r.Updates) > 0 {
		m.Updates = make([]*pb.StatusUpdate, len(r.Updates))
		for i := range r.Updates {
			u := &r.Updates[i]
			m.Updates[i] = &pb.StatusUpdate{
				Job:       u.Job,
				Token:     uint64(u.Token),
				Status:    pb.ReportStatus(u.Status),
				Outputs:   blocksToPB(u.Outputs),
				Reason:    u.Reason,
				Signature: u.Signature,
			}
		}
	}
	return m
}

func pollResponseToGo(m *pb.PollResponse) *ck.PollResponse {
	r := &ck.PollResponse{}
	if js := m.GetJobs(); len(js) > 0 {
		r.Jobs = make([]ck.JobReply, len(js))
		for i, j := range js {
			r.Jobs[i] = ck.JobReply{
				Job:       j.GetJob(),
				Outcome:   enumToGo[ck.Outcome](j.GetOutcome()),
				Token:     fencing.Token(j.GetToken()),
				Deadline:  j.GetDeadline(),
				Lease:     time.Duration(j.GetLease()),
				Plan:      planToGo(j.GetPlan()),
				Signature: j.GetSignature(),
			}
		}
	}
	return r
}

func pollResponseToPB(r *ck.PollResponse) *pb.PollResponse {
	m := &pb.PollResponse{}
	if len(r.Jobs) > 0 {
		m.Jobs = make([]*pb.JobReply, len(r.Jobs))
		for i := range r.Jobs {
			j := &r.Jobs[i]
			m.Jobs[i] = &pb.JobReply{
				Job:       j.Job,
				Outcome:   pb.Outcome(j.Outcome),
				Token:     uint64(j.Token),
				Deadline:  j.Deadline,
				Lease:     int64(j.Lease),
				Plan:      planToPB(j.Plan),
				Signature: j.Signature,
			}
		}
	}
	return m
}

func planToGo(m *pb.JobPlan) *ck.JobPlan {
	if m == nil {
		return nil
	}
	p := &ck.JobPlan{Name: m.GetName(), Tenant: m.GetTenant(), Shard: m.GetShard(), Level: m.GetLevel(), Sources: m.GetSources()}
	if ts := m.GetTombstones(); len(ts) > 0 {
		p.Tombstones = make([]ck.Tombstone, len(ts))
		for i, t := range ts {
			p.Tombstones[i] = ck.Tombstone{Kind: enumToGo[ck.TombstoneKind](t.GetKind()), Target: t.GetTarget()}
		}
	}
	return p
}

func planToPB(p *ck.JobPlan) *pb.JobPlan {
	if p == nil {
		return nil
	}
	m := &pb.JobPlan{Name: p.Name, Tenant: p.Tenant, Shard: p.Shard, Level: p.Level, Sources: p.Sources}
	if len(p.Tombstones) > 0 {
		m.Tombstones = make([]*pb.Tombstone, len(p.Tombstones))
		for i, t := range p.Tombstones {
			m.Tombstones[i] = &pb.Tombstone{Kind: pb.TombstoneKind(t.Kind), Target: t.Target}
		}
	}
	return m
}

func blocksToGo(ms []*pb.BlockMeta) []ck.BlockMeta {
	if len(ms) == 0 {
		return nil
	}
	bs := make([]ck.BlockMeta, len(ms))
	for i, m := range ms {
		bs[i] = ck.BlockMeta{
			ID: m.GetId(), Tenant: m.GetTenant(), Shard: m.GetShard(), Level: m.GetLevel(),
			MinTime: m.GetMinTime(), MaxTime: m.GetMaxTime(), Size: m.GetSize(),
		}
		if ds := m.GetDatasets(); len(ds) > 0 {
			bs[i].Datasets = make([]ck.DatasetMeta, len(ds))
			for k, d := range ds {
				bs[i].Datasets[k] = ck.DatasetMeta{
					Tenant: d.GetTenant(), Name: d.GetName(), Size: d.GetSize(), Records: d.GetRecords(),
					MinTime: d.GetMinTime(), MaxTime: d.GetMaxTime(),
				}
			}
		}
	}
	return bs
}

func blocksToPB(bs []ck.BlockMeta) []*pb.BlockMeta {
	if len(bs) == 0 {
		return nil
	}
	ms := make([]*pb.BlockMeta, len(bs))
	for i := range bs {
		b := &bs[i]
		ms[i] = &pb.BlockMeta{
			Id: b.ID, Tenant: b.Tenant, Shard: b.Shard, Level: b.Level,
			MinTime: b.MinTime, MaxTime: b.MaxTime, Size: b.Size,
		}
		if len(b.Datasets) > 0 {
			ms[i].Datasets = make([]*pb.DatasetMeta, len(b.Datasets))
			for k, d := range b.Datasets {
				ms[i].Datasets[k] = &pb.DatasetMeta{
					Tenant: d.Tenant, Name: d.Name, Size: d.Size, Records: d.Records,
					MinTime: d.MinTime, MaxTime: d.MaxTime,
				}
			}
		}
	}
	return ms
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
