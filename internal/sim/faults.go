package sim

import (
	"fmt"
	"strings"
)

// Fault is one kind of fault (or chaos event) the simulation injects. Each
// has a probability in [Options.Prob]; the report counts how often each
// was injected.
type Fault int

// The fault kinds. The comment says when the probability is drawn.
const (
	// FaultWorkerCrash: a worker dies with its jobs (per worker, per step).
	FaultWorkerCrash Fault = iota
	// FaultSlowWorker: a worker stalls after an assignment until its lease
	// has expired, then reports with its stale token (per assignment).
	FaultSlowWorker
	// FaultWorkerFail: a finished job is reported as failed (per job).
	FaultWorkerFail
	// FaultWorkerRelease: a worker shuts down, releasing its jobs (per
	// worker, per step).
	FaultWorkerRelease
	// FaultLoseRequest, FaultDupRequest, FaultDelayRequest: a poll request
	// is lost, duplicated or delayed (per message).
	FaultLoseRequest
	FaultDupRequest
	FaultDelayRequest
	// FaultLoseResponse, FaultDupResponse, FaultDelayResponse: the same for
	// poll responses.
	FaultLoseResponse
	FaultDupResponse
	FaultDelayResponse
	// FaultRetryPoll: a worker retries its outstanding request (same
	// sequence) before its timeout (per worker, per step); timeouts retry
	// too and are counted here.
	FaultRetryPoll
	// FaultRecordedReply: the leader answers a retried request from the
	// poll log without proposing (per retried request).
	FaultRecordedReply
	// FaultStalePrepare: a prepared command is held back for a few steps
	// before it is proposed, so that it is applied after conflicting
	// changes (per prepared command).
	FaultStalePrepare
	// FaultLeaderChange: a new leader is elected (per step).
	FaultLeaderChange
	// FaultDropTail: on a leader change, the uncommitted tail is dropped;
	// otherwise the next leader commits it (counted as FaultKeepTail).
	FaultDropTail
	FaultKeepTail
	// FaultLostReply: the reply to a committed entry is lost at the leader
	// (per reply, polls and ingest).
	FaultLostReply
	// FaultSnapshotRestore: a replica snapshots and restores itself (per
	// step).
	FaultSnapshotRestore
	// FaultCorruptRestore: a replica is handed a corrupt or truncated
	// snapshot, which it must refuse with its state intact (per step).
	FaultCorruptRestore
	// FaultRebuildReplica: a replica is rebuilt from another replica's
	// snapshot plus the log tail (per step).
	FaultRebuildReplica
	// FaultReapply: a replica is handed an entry it already applied (per
	// step).
	FaultReapply
	// FaultClockBackward, FaultClockForward: the leader's clock jumps (per
	// step); forward, within the budget of forwardBudget.
	FaultClockBackward
	FaultClockForward
	// FaultIngestBurst: a burst of blocks in one command (per step).
	FaultIngestBurst
	// FaultDuplicateIngest: an earlier ingest batch is proposed again (per
	// step).
	FaultDuplicateIngest
	// Operator commands (per step).
	FaultPause
	FaultResume
	FaultRetry
	FaultCancel
	FaultRequeue
	FaultSetMaxFailures
	// FaultRetention: a retention policy drops old blocks (per step).
	FaultRetention
	// FaultWatermark: a reader watermark is recorded (per step).
	FaultWatermark
	// Bucket mode only. FaultBucketRace: another coordinator appends the
	// entry a coordinator is creating first (per create).
	FaultBucketRace
	// FaultBucketPutFail: a create fails without creating (per create).
	FaultBucketPutFail
	// FaultBucketLostAck: a create succeeds but reports a failure (per
	// create): the proposer must read back whose entry it is.
	FaultBucketLostAck
	// FaultBucketReadFail: reading an entry fails (per read).
	FaultBucketReadFail
	// FaultBucketRestart: a coordinator restarts from the newest
	// checkpoint (per step).
	FaultBucketRestart
	// FaultBucketTruncate: a coordinator truncates the log behind the
	// newest checkpoint, under replicas that lag (per step).
	FaultBucketTruncate
	// FaultBucketStoreClock: the store's clock jumps ahead by more than a
	// lease (a coordinator outage), so the next entry's time steps (per
	// step).
	FaultBucketStoreClock
	// FaultBucketPause: a coordinator other than the reference replica
	// stops (a paused process) for 40 to 160 steps, long enough for the
	// log to be truncated past it (per step).
	FaultBucketPause
	// FaultMark: an operator marks one to three live blocks "do not
	// compact" (per step): queued ones are
	// quarantined; a claimed or final-level one makes the mark refused.
	FaultMark
	// FaultPolicy: an operator sets or clears a tenant's (or the default)
	// scheduling policy — class, cap, run window, not-before time,
	// backpressure thresholds — or asks to compact a tenant now (per
	// step, from cluster version 5).
	FaultPolicy
	// FaultBucketExistsAck: a create succeeds but is answered "exists"
	// (per create of an entry): the answer was lost and the client's retry
	// found the object (S3's 412). The proposer must tell its own entry by
	// the nonce, not take it for another coordinator's.
	FaultBucketExistsAck
	// NumFaults is the number of fault kinds.
	NumFaults
)

var faultNames = [NumFaults]string{
	"crash", "slow", "fail", "release",
	"lose-req", "dup-req", "delay-req", "lose-resp", "dup-resp", "delay-resp",
	"retry-poll", "recorded-reply", "stale-prepare",
	"leader-change", "drop-tail", "keep-tail", "lost-reply",
	"snapshot-restore", "corrupt-restore", "rebuild", "reapply",
	"clock-back", "clock-fwd", "ingest-burst", "dup-ingest",
	"pause", "resume", "retry", "cancel", "requeue", "set-max-failures",
	"retention", "watermark",
	"bucket-race", "bucket-put-fail", "bucket-lost-ack", "bucket-read-fail",
	"bucket-restart", "bucket-truncate", "bucket-store-clock", "bucket-pause",
	"mark", "policy", "bucket-exists-ack",
}

// String returns the fault's short name, as accepted by [ParseFaults].
func (f Fault) String() string {
	if f >= 0 && f < NumFaults {
		return faultNames[f]
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// ParseFaults parses a comma-separated list of fault names.
func ParseFaults(s string) ([]Fault, error) {
	var out []Fault
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		found := false
		for f := range NumFaults {
			if faultNames[f] == name {
				out = append(out, f)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("sim: unknown fault %q (known: %s)", name, strings.Join(faultNames[:], ","))
		}
	}
	return out, nil
}

// DefaultProb returns the default probability of each fault.
func DefaultProb() [NumFaults]float64 {
	var p [NumFaults]float64
	p[FaultWorkerCrash] = 0.003
	p[FaultSlowWorker] = 0.05
	p[FaultWorkerFail] = 0.08
	p[FaultWorkerRelease] = 0.002
	p[FaultLoseRequest] = 0.05
	p[FaultDupRequest] = 0.05
	p[FaultDelayRequest] = 0.1
	p[FaultLoseResponse] = 0.05
	p[FaultDupResponse] = 0.05
	p[FaultDelayResponse] = 0.1
	p[FaultRetryPoll] = 0.05
	p[FaultRecordedReply] = 0.5
	p[FaultStalePrepare] = 0.1
	p[FaultLeaderChange] = 0.015
	p[FaultDropTail] = 0.5
	p[FaultKeepTail] = 1 // decided by FaultDropTail; disabling it drops every tail
	p[FaultLostReply] = 0.05
	p[FaultSnapshotRestore] = 0.01
	p[FaultCorruptRestore] = 0.005
	p[FaultRebuildReplica] = 0.01
	p[FaultReapply] = 0.01
	p[FaultClockBackward] = 0.005
	p[FaultClockForward] = 0.005
	p[FaultIngestBurst] = 0.02
	p[FaultDuplicateIngest] = 0.02
	p[FaultPause] = 0.005
	p[FaultResume] = 0.01
	p[FaultRetry] = 0.01
	p[FaultCancel] = 0.005
	p[FaultRequeue] = 0.01
	p[FaultMark] = 0.01
	p[FaultPolicy] = 0.01
	p[FaultSetMaxFailures] = 0.003
	p[FaultRetention] = 0.005
	p[FaultWatermark] = 0.01
	p[FaultBucketRace] = 0.05
	p[FaultBucketPutFail] = 0.02
	p[FaultBucketLostAck] = 0.02
	p[FaultBucketExistsAck] = 0.02
	p[FaultBucketReadFail] = 0.01
	p[FaultBucketRestart] = 0.01
	p[FaultBucketTruncate] = 0.01
	p[FaultBucketStoreClock] = 0.005
	p[FaultBucketPause] = 0.005
	return p
}
