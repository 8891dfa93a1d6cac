package raftfsm

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strings"
	"unicode"
	"unicode/utf8"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/fencing"
	"github.com/compactkit/compactkit/internal/codec"
	"github.com/compactkit/compactkit/internal/dups"
	"github.com/compactkit/compactkit/internal/enum"
	"github.com/compactkit/compactkit/internal/ident"
)

// CommandVersion is the newest command encoding this release writes and
// reads, and the newest cluster version it supports. A release reads every
// version from the first release's, 5, up to it; it writes a newer version
// only once the replicated cluster version (see [SetClusterVersion]) allows
// it, so replicas of the previous release never see a command they cannot
// decode, and every change to what Apply does takes effect only once the
// cluster version is raised.
//
// Version 5 is a header, the CBOR body, and the CRC-32C (Castagnoli) of
// header and body, big-endian, so that a replica detects a damaged entry
// instead of applying it; the body writes its messages' optional trailing
// fields only when they are set (the compact form of package
// internal/codec). Version 6 writes every field of every message, so that
// the number of fields depends only on the version. Cluster version 6
// grades a tenant's backpressure again on every change of its queue and
// compares debt thresholds with ready batches (see policyGradesVersion),
// lets a poll that ends a capped tenant's job start the tenant's next one
// (see capFreedVersion), and tombstones a replacement's sources as one
// record (see recordsVersion).
const CommandVersion byte = 6

// oldestVersion is the oldest command and cluster version this release
// reads and runs at: the first release's.
const oldestVersion byte = 5

// fullFormVersion is the first command and cluster version whose commands
// and snapshots write every field of their messages.
const fullFormVersion byte = 6

// codecOf returns c in the form of the given command or cluster version.
func codecOf(c *codec.Codec, version byte) *codec.Codec {
	if version < fullFormVersion {
		return c.Compact()
	}
	return c
}

// commandChecksumSize is the size of a command's checksum trailer.
const commandChecksumSize = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Command is one entry of the host's log, as the state machine applies
// it: the proposer's timestamp and exactly one operation.
//
// Build a command by filling the struct (one operation) and encode it with
// [FSM.Encode] on the leader (or [Command.MarshalVersion]); the state
// machine decodes and validates it in Apply.
type Command struct {
	_ struct{} `cbor:",toarray"`
	// Time is the proposer's timestamp (unix nanoseconds). The leader
	// stamps it when it encodes the command ([FSM.Encode]) or prepares a
	// poll ([FSM.Prepare]); a time set by anyone else is overwritten. Zero
	// means "use the entry's time" (for hosts whose log carries a leader
	// timestamp).
	Time int64
	// Exactly one of the following is set.
	AddBlocks      *AddBlocks
	Poll           *Poll
	Config         *Config
	TookOffice     *TookOffice
	Retention      *Retention
	Watermark      *Watermark
	Operator       *Operator
	PreparePoll    *PreparePoll
	ClusterVersion *SetClusterVersion
	// Policy changes the scheduling policies.
	Policy *PolicyCommand
}

// items lists the command's encoded fields, in order, with p standing for
// the policy command's record: an array of eleven items (in the compact
// form of version 5, ten without a policy).
func (c *Command) items(p **policyCommandRec) []any {
	return []any{&c.Time, &c.AddBlocks, &c.Poll, &c.Config, &c.TookOffice, &c.Retention, &c.Watermark, &c.Operator,
		&c.PreparePoll, &c.ClusterVersion, p}
}

// AddBlocks adds a batch of newly written blocks: each enters the index
// (duplicates are refused individually) and the compaction queue.
type AddBlocks struct {
	_      struct{} `cbor:",toarray"`
	Blocks []ck.BlockMeta
}

// Poll is a prepared worker poll: the worker's identity, the jobs it
// reported, and the plan update the leader prepared for it.
type Poll struct {
	_ struct{} `cbor:",toarray"`
	// WorkerID and Seq identify the request; a retried request (same
	// worker, same Seq) returns the recorded response and acts on nothing.
	WorkerID string
	Seq      uint64
	// Reports are the jobs the worker reported, in request order, with the
	// tokens it presented: the response answers each.
	Reports []Report
	// Update holds the changes Prepare decided.
	Update ck.PlanUpdate
}

// Report is one job a worker reported in a poll.
type Report struct {
	_      struct{} `cbor:",toarray"`
	Job    string
	Token  fencing.Token
	Status ck.ReportStatus
}

// TookOffice is the first command of a new leader: every in-progress lease
// is extended by one lease duration, so an election does not cost healthy
// jobs their leases.
type TookOffice struct {
	_ struct{} `cbor:",toarray"`
	// Leader identifies the new leader (for logs and stats).
	Leader string
}

// Retention drops live blocks that end before a time: of one tenant, or of
// every tenant when All is set.
type Retention struct {
	_      struct{} `cbor:",toarray"`
	Tenant string
	All    bool
	Before int64
}

// Watermark records the start time of the oldest query still reading (unix
// nanoseconds): tombstones are not released while such a reader may still
// read the objects they delete.
type Watermark struct {
	_            struct{} `cbor:",toarray"`
	OldestReader int64
}

// OperatorAction is an operator command.
type OperatorAction uint8

// The operator actions.
const (
	// OpPause pauses a tenant, a level, or a tenant at a level: no new jobs
	// are planned or assigned for it; jobs in progress run to their end.
	OpPause OperatorAction = iota + 1
	// OpResume undoes OpPause.
	OpResume
	// OpRetry returns an excluded job (or every excluded job when Job is
	// empty) to the queue with its failures reset.
	OpRetry
	// OpSetMaxFailures changes the failure limit (0 = unlimited).
	OpSetMaxFailures
	// OpCancel removes a job; its sources return to the queue.
	OpCancel
	// OpRequeue returns quarantined blocks to the queue, at their original
	// arrival positions: it also clears marks.
	OpRequeue
	// OpMark takes queued blocks out of compaction ("do not compact"): they
	// are quarantined with the operator's Reason and no job, until an
	// OpRequeue. Marking a block a job claims is refused, naming the job.
	OpMark
)

// String returns the action name.
func (a OperatorAction) String() string {
	return enum.Name("OperatorAction", a, OpPause, "pause", "resume", "retry", "set_max_failures", "cancel", "requeue", "mark")
}

// Operator is an operator command.
type Operator struct {
	_      struct{} `cbor:",toarray"`
	Action OperatorAction
	// Tenant and Level select what to pause or resume; a nil Level means
	// every level, an empty Tenant every tenant (not both).
	Tenant string
	Level  *uint32
	// Job names the job to retry or cancel.
	Job string
	// MaxFailures is the new failure limit (OpSetMaxFailures).
	MaxFailures uint32
	// Blocks are the quarantined block IDs to requeue (OpRequeue), or the
	// queued ones to mark (OpMark).
	Blocks []string
	// By names who issued the command (an operator, a tool), as the
	// host's authentication knows them: carried in the log, so every
	// replica logs it with the command. At most 128 bytes of printable
	// UTF-8. By, Reason and All are optional in version 5's compact form.
	By string `codec:"optional"`
	// Reason says why the blocks are marked (OpMark only): at most
	// 1024 bytes of printable UTF-8.
	Reason string
	// All pauses or resumes every tenant (Tenant empty); an empty Tenant
	// without All names the empty tenant (the multi-tenant segments' and
	// cleanup-only jobs'), as in [Retention] and [PolicyCommand].
	All bool
}

// maxOperatorNameLen bounds [Operator.By].
const maxOperatorNameLen = 128

// PreparePoll is the first entry of a two-commit poll: it changes nothing
// but the clock; its index becomes the fencing token of the assignments of
// the poll update that follows (compactkit.PlanUpdate.TokenIndex).
type PreparePoll struct {
	_        struct{} `cbor:",toarray"`
	WorkerID string
	Seq      uint64
}

// SetClusterVersion raises the command version the leader may write. Hosts
// send it once every replica runs a release that reads that version.
type SetClusterVersion struct {
	_       struct{} `cbor:",toarray"`
	Version byte
}

// MarshalVersion encodes the command in the given command version (5 to
// [CommandVersion]), as it is: a leader encodes with [FSM.Encode], which
// stamps the leader's time and writes the version the replicated cluster
// version allows, so that replicas of the previous release can read it
// during a rolling upgrade.
func (c *Command) MarshalVersion(version byte) ([]byte, error) {
	return c.appendVersion(nil, version)
}

// appendVersion appends MarshalVersion's encoding to dst.
func (c *Command) appendVersion(dst []byte, version byte) ([]byte, error) {
	if version < oldestVersion || version > CommandVersion {
		return nil, fmt.Errorf("raftfsm: command version %d, this release writes %d to %d: %w", version, oldestVersion, CommandVersion, ErrClusterVersion)
	}
	p := recordPolicyCommand(c.Policy)
	start := len(dst)
	data, err := codecOf(codec.Default, version).AppendItems(codec.AppendHeader(dst, codec.KindCommand, version), 10, c.items(&p)...)
	if err != nil {
		return nil, fmt.Errorf("raftfsm: command: %w", err)
	}
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data[start:], castagnoli)), nil
}

// DecodeCommand decodes and validates a command encoded by [FSM.Encode] or
// [Command.MarshalVersion]. Malformed input
// returns an error wrapping one of compactkit's sentinel errors
// (compactkit.ErrChecksum for a command whose checksum does not match,
// compactkit.ErrUnknownVersion for a version this release does not read);
// it never panics.
func DecodeCommand(data []byte) (*Command, error) {
	c, _, err := decodeCommand(data)
	return c, err
}

// decodeCommand is DecodeCommand, also returning the version found (0 if
// the header could not be read).
func decodeCommand(data []byte) (*Command, byte, error) {
	version, _, err := codec.ParseHeader(data, codec.KindCommand)
	if err != nil {
		return nil, 0, fmt.Errorf("raftfsm: command: %w", err)
	}
	if version < oldestVersion || version > CommandVersion {
		return nil, version, fmt.Errorf("raftfsm: command version %d, this release reads %d to %d: %w", version, oldestVersion, CommandVersion, ck.ErrUnknownVersion)
	}
	if len(data) < codec.HeaderSize+commandChecksumSize {
		return nil, version, fmt.Errorf("raftfsm: command of %d bytes: %w", len(data), ck.ErrTruncated)
	}
	body, sum := data[:len(data)-commandChecksumSize], data[len(data)-commandChecksumSize:]
	if got, want := binary.BigEndian.Uint32(sum), crc32.Checksum(body, castagnoli); got != want {
		return nil, version, fmt.Errorf("raftfsm: command checksum %08x, computed %08x: %w", got, want, ck.ErrChecksum)
	}
	var (
		c Command
		p *policyCommandRec
	)
	if err := codecOf(codec.Default, version).UnmarshalItems(body[codec.HeaderSize:], 10, c.items(&p)...); err != nil {
		return nil, version, fmt.Errorf("raftfsm: command: %w", err)
	}
	c.Policy = p.command()
	if err := c.Validate(); err != nil {
		return nil, version, err
	}
	return &c, version, nil
}

// maxBlocksPerCommand bounds the blocks of one AddBlocks command, whatever
// the limits.
const maxBlocksPerCommand = 65536

// Validate reports whether c is well-formed: exactly one operation, with
// valid fields. The state machine validates every command it decodes; the
// error wraps [ErrInvalidCommand] or a root-package validation error.
func (c *Command) Validate() error {
	n := 0
	for _, set := range []bool{c.AddBlocks != nil, c.Poll != nil, c.Config != nil, c.TookOffice != nil,
		c.Retention != nil, c.Watermark != nil, c.Operator != nil, c.PreparePoll != nil, c.ClusterVersion != nil, c.Policy != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("raftfsm: command with %d operations, want 1: %w", n, ErrInvalidCommand)
	}
	if c.Time < 0 {
		return fmt.Errorf("raftfsm: command time %d: %w", c.Time, ErrInvalidCommand)
	}
	switch {
	case c.AddBlocks != nil:
		return c.AddBlocks.validate()
	case c.Poll != nil:
		return c.Poll.validate()
	case c.Config != nil:
		return c.Config.Validate()
	case c.TookOffice != nil:
		return nil
	case c.Retention != nil:
		r := c.Retention
		if err := ident.ValidateTenant(r.Tenant); err != nil {
			return fmt.Errorf("raftfsm: retention: %w", err)
		}
		if r.All == (r.Tenant != "") {
			return fmt.Errorf("raftfsm: retention: tenant %q with all=%t: %w", r.Tenant, r.All, ErrInvalidCommand)
		}
		return nil
	case c.Watermark != nil:
		if c.Watermark.OldestReader < 0 {
			return fmt.Errorf("raftfsm: watermark %d: %w", c.Watermark.OldestReader, ErrInvalidCommand)
		}
		return nil
	case c.Operator != nil:
		return c.Operator.validate()
	case c.Policy != nil:
		return c.Policy.validate()
	case c.PreparePoll != nil:
		if err := ident.ValidateWorkerID(c.PreparePoll.WorkerID); err != nil {
			return fmt.Errorf("raftfsm: prepare poll: %w", err)
		}
		if c.PreparePoll.Seq == 0 {
			return fmt.Errorf("raftfsm: prepare poll: sequence 0: %w", ErrInvalidCommand)
		}
		return nil
	default: // ClusterVersion
		if v := c.ClusterVersion.Version; v < oldestVersion || v > CommandVersion {
			return fmt.Errorf("raftfsm: cluster version %d, this release writes %d to %d: %w", v, oldestVersion, CommandVersion, ErrClusterVersion)
		}
		return nil
	}
}

func (a *AddBlocks) validate() error {
	if len(a.Blocks) == 0 || len(a.Blocks) > maxBlocksPerCommand {
		return fmt.Errorf("raftfsm: add blocks: %d blocks, want 1 to %d: %w", len(a.Blocks), maxBlocksPerCommand, ErrInvalidCommand)
	}
	for i := range a.Blocks {
		if err := a.Blocks[i].Validate(); err != nil {
			return fmt.Errorf("raftfsm: add blocks: block %d: %w", i, err)
		}
	}
	return nil
}

func (p *Poll) validate() error {
	if err := ident.ValidateWorkerID(p.WorkerID); err != nil {
		return fmt.Errorf("raftfsm: poll: %w", err)
	}
	if p.Seq == 0 {
		return fmt.Errorf("raftfsm: poll from %s: sequence 0: %w", p.WorkerID, ErrInvalidCommand)
	}
	var seen dups.Tracker[string]
	for i := range p.Reports {
		r := &p.Reports[i]
		if err := ident.ValidateJobName(r.Job); err != nil {
			return fmt.Errorf("raftfsm: poll from %s: report %d: %w", p.WorkerID, i, err)
		}
		if err := ident.CheckReportStatus(uint8(r.Status)); err != nil {
			return fmt.Errorf("raftfsm: poll from %s: report on %s: %w", p.WorkerID, r.Job, err)
		}
		if seen.Seen(r.Job) {
			return fmt.Errorf("raftfsm: poll from %s: job %s reported twice: %w", p.WorkerID, r.Job, ErrInvalidCommand)
		}
	}
	if err := p.Update.Validate(); err != nil {
		return fmt.Errorf("raftfsm: poll from %s: %w", p.WorkerID, err)
	}
	if p.Update.Time < 0 {
		return fmt.Errorf("raftfsm: poll from %s: update time %d: %w", p.WorkerID, p.Update.Time, ErrInvalidCommand)
	}
	return nil
}

func (o *Operator) validate() error {
	if err := ident.ValidateTenant(o.Tenant); err != nil {
		return fmt.Errorf("raftfsm: operator %s: %w", o.Action, err)
	}
	if len(o.By) > maxOperatorNameLen || !utf8.ValidString(o.By) || strings.ContainsFunc(o.By, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("raftfsm: operator %s: issuer %q: at most %d bytes of printable UTF-8: %w", o.Action, o.By, maxOperatorNameLen, ErrInvalidCommand)
	}
	if o.Reason != "" && o.Action != OpMark {
		return fmt.Errorf("raftfsm: operator %s: a reason is for marks only: %w", o.Action, ErrInvalidCommand)
	}
	if o.All && (o.Tenant != "" || o.Action != OpPause && o.Action != OpResume) {
		return fmt.Errorf("raftfsm: operator %s: all with tenant %q: all is for pausing and resuming every tenant: %w", o.Action, o.Tenant, ErrInvalidCommand)
	}
	if len(o.Reason) > ident.MaxReasonLen || !utf8.ValidString(o.Reason) || strings.ContainsFunc(o.Reason, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return fmt.Errorf("raftfsm: operator %s: reason: at most %d bytes of printable UTF-8: %w", o.Action, ident.MaxReasonLen, ErrInvalidCommand)
	}
	switch o.Action {
	case OpPause, OpResume:
		// Every tenant (All) and no level pause everything.
		return nil
	case OpRetry:
		if o.Job != "" {
			if err := ident.ValidateJobName(o.Job); err != nil {
				return fmt.Errorf("raftfsm: operator retry: %w", err)
			}
		}
		return nil
	case OpSetMaxFailures:
		return nil
	case OpCancel:
		if err := ident.ValidateJobName(o.Job); err != nil {
			return fmt.Errorf("raftfsm: operator cancel: %w", err)
		}
		return nil
	case OpRequeue, OpMark:
		if len(o.Blocks) == 0 || len(o.Blocks) > maxBlocksPerCommand {
			return fmt.Errorf("raftfsm: operator %s: %d blocks, want 1 to %d: %w", o.Action, len(o.Blocks), maxBlocksPerCommand, ErrInvalidCommand)
		}
		for _, id := range o.Blocks {
			if err := ident.ValidateID(id); err != nil {
				return fmt.Errorf("raftfsm: operator %s: %w", o.Action, err)
			}
		}
		return nil
	default:
		return fmt.Errorf("raftfsm: operator action %d: %w", uint8(o.Action), ErrInvalidCommand)
	}
}
