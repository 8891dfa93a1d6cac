package compactkit_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	ck "github.com/compactkit/compactkit"
	"github.com/compactkit/compactkit/compactkittest"
	"github.com/compactkit/compactkit/internal/ident"
)

func validBlock() ck.BlockMeta {
	return ck.BlockMeta{
		ID: "01JD8ZQ8Y0S1G6N9V3C2X7K4PB", Tenant: "acme", Shard: 1, MinTime: 10, MaxTime: 20, Size: 100,
		Datasets: []ck.DatasetMeta{{Name: "svc", Size: 100, Records: 3, MinTime: 10, MaxTime: 20}},
	}
}

func TestBlockValidate(t *testing.T) {
	cases := map[string]struct {
		mut  func(*ck.BlockMeta)
		want error
	}{
		"empty ID":              {func(b *ck.BlockMeta) { b.ID = "" }, ident.ErrEmptyID},
		"dotdot ID":             {func(b *ck.BlockMeta) { b.ID = "a/../b" }, ident.ErrInvalidID},
		"absolute ID":           {func(b *ck.BlockMeta) { b.ID = "/a" }, ident.ErrInvalidID},
		"empty segment":         {func(b *ck.BlockMeta) { b.ID = "a//b" }, ident.ErrInvalidID},
		"backslash":             {func(b *ck.BlockMeta) { b.ID = `a\b` }, ident.ErrInvalidID},
		"control char":          {func(b *ck.BlockMeta) { b.ID = "a\x00b" }, ident.ErrInvalidID},
		"long ID":               {func(b *ck.BlockMeta) { b.ID = strings.Repeat("x", ident.MaxIDLen+1) }, ident.ErrInvalidID},
		"min after max":         {func(b *ck.BlockMeta) { b.MinTime = 30 }, ident.ErrTimeRange},
		"negative size":         {func(b *ck.BlockMeta) { b.Size = -1 }, ident.ErrNegative},
		"dataset no name":       {func(b *ck.BlockMeta) { b.Datasets[0].Name = "" }, ident.ErrEmptyID},
		"dataset neg records":   {func(b *ck.BlockMeta) { b.Datasets[0].Records = -1 }, ident.ErrNegative},
		"dataset neg size":      {func(b *ck.BlockMeta) { b.Datasets[0].Size = -5 }, ident.ErrNegative},
		"dataset outside":       {func(b *ck.BlockMeta) { b.Datasets[0].MaxTime = 21 }, ident.ErrTimeRange},
		"dataset min > max":     {func(b *ck.BlockMeta) { b.Datasets[0].MinTime = 20; b.Datasets[0].MaxTime = 15 }, ident.ErrTimeRange},
		"foreign tenant":        {func(b *ck.BlockMeta) { b.Datasets[0].Tenant = "globex" }, ident.ErrInconsistent},
		"multi-tenant untagged": {func(b *ck.BlockMeta) { b.Tenant = "" }, ident.ErrInconsistent},
		"no tenant no data":     {func(b *ck.BlockMeta) { b.Tenant = ""; b.Datasets = nil }, ident.ErrInconsistent},
		"duplicate dataset": {func(b *ck.BlockMeta) {
			b.Datasets = append(b.Datasets, ck.DatasetMeta{Tenant: "acme", Name: "svc", MinTime: 10, MaxTime: 10})
		}, ident.ErrInconsistent},
	}
	b := validBlock()
	require.NoError(t, b.Validate())
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := validBlock()
			c.mut(&b)
			require.ErrorIs(t, b.Validate(), c.want)
		})
	}
}

func TestMultiTenantSegment(t *testing.T) {
	b := ck.BlockMeta{ID: "seg-1", MinTime: 0, MaxTime: 9, Datasets: []ck.DatasetMeta{
		{Tenant: "globex", Name: "a", MaxTime: 9},
		{Tenant: "acme", Name: "a", MaxTime: 9},
		{Tenant: "acme", Name: "b", Records: 4, MaxTime: 9},
	}}
	require.NoError(t, b.Validate())
	require.Equal(t, []string{"acme", "globex"}, b.Tenants())
	require.Equal(t, int64(4), b.Records())
	require.Equal(t, "acme", b.DatasetTenant(&b.Datasets[1]))
}

func TestJobPlanValidate(t *testing.T) {
	ok := ck.JobPlan{Name: "L0-acme-1-00ff", Sources: []string{"a", "b"}}
	require.NoError(t, ok.Validate())
	cleanup := ck.JobPlan{Name: "cleanup-1", Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "a"}}}
	require.NoError(t, cleanup.Validate())
	require.True(t, cleanup.CleanupOnly())

	cases := map[string]struct {
		p    ck.JobPlan
		want error
	}{
		"empty name":       {ck.JobPlan{Sources: []string{"a"}}, ident.ErrEmptyID},
		"slash in name":    {ck.JobPlan{Name: "a/b", Sources: []string{"a"}}, ident.ErrInvalidID},
		"dotdot name":      {ck.JobPlan{Name: "..", Sources: []string{"a"}}, ident.ErrInvalidID},
		"nothing to do":    {ck.JobPlan{Name: "j"}, ident.ErrInconsistent},
		"repeated source":  {ck.JobPlan{Name: "j", Sources: []string{"a", "a"}}, ident.ErrInconsistent},
		"bad source":       {ck.JobPlan{Name: "j", Sources: []string{"../x"}}, ident.ErrInvalidID},
		"unknown tomb":     {ck.JobPlan{Name: "j", Tombstones: []ck.Tombstone{{Kind: 9, Target: "a"}}}, ident.ErrUnknownChange},
		"bad prefix":       {ck.JobPlan{Name: "j", Tombstones: []ck.Tombstone{{Kind: ck.TombstonePrefix, Target: "blocks/x"}}}, ident.ErrInvalidID},
		"foreign prefix":   {ck.JobPlan{Name: "j", Tombstones: []ck.Tombstone{{Kind: ck.TombstonePrefix, Target: "etc/"}}}, ident.ErrInvalidID},
		"repeated tomb":    {ck.JobPlan{Name: "j", Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "a"}, {Kind: ck.TombstoneBlock, Target: "a"}}}, ident.ErrInconsistent},
		"escaping prefix":  {ck.JobPlan{Name: "j", Tombstones: []ck.Tombstone{{Kind: ck.TombstonePrefix, Target: "blocks/../"}}}, ident.ErrInvalidID},
		"long tenant name": {ck.JobPlan{Name: "j", Tenant: strings.Repeat("t", ident.MaxNameLen+1), Sources: []string{"a"}}, ident.ErrInvalidID},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { require.ErrorIs(t, c.p.Validate(), c.want) })
	}
}

func TestStatusUpdateValidate(t *testing.T) {
	plan := ck.JobPlan{Name: "j", Sources: []string{"a"}}
	out := validBlock()
	cases := map[string]struct {
		u    ck.StatusUpdate
		want error
	}{
		"unknown status":       {ck.StatusUpdate{Job: "j", Token: 1, Status: 0}, ident.ErrUnknownStatus},
		"status out of range":  {ck.StatusUpdate{Job: "j", Token: 1, Status: 9}, ident.ErrUnknownStatus},
		"token zero":           {ck.StatusUpdate{Job: "j", Status: ck.ReportInProgress}, ident.ErrInconsistent},
		"no job":               {ck.StatusUpdate{Token: 1, Status: ck.ReportInProgress}, ident.ErrEmptyID},
		"success w/o outputs":  {ck.StatusUpdate{Job: "j", Token: 1, Status: ck.ReportSuccess}, ident.ErrMissingOutputs},
		"outputs on a failure": {ck.StatusUpdate{Job: "j", Token: 1, Status: ck.ReportFailure, Outputs: []ck.BlockMeta{out}}, ident.ErrInconsistent},
		"bad output":           {ck.StatusUpdate{Job: "j", Token: 1, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{{ID: "x"}}}, ident.ErrInconsistent},
		"repeated output":      {ck.StatusUpdate{Job: "j", Token: 1, Status: ck.ReportSuccess, Outputs: []ck.BlockMeta{out, out}}, ident.ErrInconsistent},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { require.ErrorIs(t, c.u.ValidateFor(&plan), c.want) })
	}
	// A cleanup-only job succeeds without outputs.
	cleanup := ck.JobPlan{Name: "c", Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "a"}}}
	u := ck.StatusUpdate{Job: "c", Token: 3, Status: ck.ReportSuccess}
	require.NoError(t, u.ValidateFor(&cleanup))
}

func TestPollRequestValidate(t *testing.T) {
	u := ck.StatusUpdate{Job: "j", Token: 1, Status: ck.ReportInProgress}
	cases := map[string]struct {
		r    ck.PollRequest
		want error
	}{
		"no worker":      {ck.PollRequest{Seq: 1}, ident.ErrEmptyID},
		"seq zero":       {ck.PollRequest{WorkerID: "w"}, ident.ErrInconsistent},
		"negative slots": {ck.PollRequest{WorkerID: "w", Seq: 1, FreeSlots: -1}, ident.ErrNegative},
		"bad update":     {ck.PollRequest{WorkerID: "w", Seq: 1, Updates: []ck.StatusUpdate{{Job: "j"}}}, ident.ErrUnknownStatus},
		"job twice":      {ck.PollRequest{WorkerID: "w", Seq: 1, Updates: []ck.StatusUpdate{u, u}}, ident.ErrInconsistent},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { require.ErrorIs(t, c.r.Validate(), c.want) })
	}
}

func TestChangeValidate(t *testing.T) {
	plan := ck.JobPlan{Name: "j", Sources: []string{"a"}}
	other := ck.JobPlan{Name: "k", Sources: []string{"a"}}
	cases := map[string]struct {
		c    ck.Change
		want error
	}{
		"unknown kind":       {ck.Change{Kind: 0, Job: "j"}, ident.ErrUnknownChange},
		"kind out of range":  {ck.Change{Kind: 10, Job: "j"}, ident.ErrUnknownChange},
		"add without plan":   {ck.Change{Kind: ck.ChangeAdd, Job: "j"}, ident.ErrInconsistent},
		"add other plan":     {ck.Change{Kind: ck.ChangeAdd, Job: "j", Plan: &other}, ident.ErrInconsistent},
		"add with version":   {ck.Change{Kind: ck.ChangeAdd, Job: "j", Plan: &plan, Version: 3}, ident.ErrInconsistent},
		"renew token zero":   {ck.Change{Kind: ck.ChangeRenew, Job: "j"}, ident.ErrInconsistent},
		"assign no worker":   {ck.Change{Kind: ck.ChangeAssign, Job: "j"}, ident.ErrEmptyID},
		"plan on assign":     {ck.Change{Kind: ck.ChangeAssign, Job: "j", Worker: "w", Plan: &plan}, ident.ErrInconsistent},
		"outputs on a renew": {ck.Change{Kind: ck.ChangeRenew, Job: "j", Token: 1, Outputs: []ck.BlockMeta{validBlock()}}, ident.ErrInconsistent},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			u := ck.PlanUpdate{Changes: []ck.Change{c.c}}
			require.ErrorIs(t, u.Validate(), c.want)
		})
	}
}

func TestStringers(t *testing.T) {
	for s := ck.StatusUnassigned; s <= ck.StatusExcluded; s++ {
		require.NotContains(t, s.String(), "(")
		require.NoError(t, ident.CheckJobStatus(uint8(s)))
	}
	for s := ck.ReportInProgress; s <= ck.ReportReleased; s++ {
		require.NotContains(t, s.String(), "(")
		require.NoError(t, ident.CheckReportStatus(uint8(s)))
	}
	for k := ck.ChangeAdd; k <= ck.ChangeCancel; k++ {
		require.NotContains(t, k.String(), "(")
		require.NoError(t, ident.CheckChangeKind(uint8(k)))
	}
	// The checks' bounds are the enumerations' last values.
	require.ErrorIs(t, ident.CheckJobStatus(uint8(ck.StatusExcluded)+1), ident.ErrUnknownStatus)
	require.ErrorIs(t, ident.CheckReportStatus(uint8(ck.ReportReleased)+1), ident.ErrUnknownStatus)
	require.ErrorIs(t, ident.CheckChangeKind(uint8(ck.ChangeCancel)+1), ident.ErrUnknownChange)
	require.ErrorIs(t, ident.CheckJobStatus(0), ident.ErrUnknownStatus)
	for o := ck.OutcomeAssigned; o <= ck.OutcomeNoLease; o++ {
		require.NotContains(t, o.String(), "(")
	}
	require.Equal(t, "JobStatus(7)", ck.JobStatus(7).String())
	require.Equal(t, "block:x", ck.Tombstone{Kind: ck.TombstoneBlock, Target: "x"}.String())
}

func TestKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		job := compactkittest.Name().Draw(t, "job")
		token := rapid.Uint64Min(1).Draw(t, "token")
		n := rapid.IntRange(0, 100).Draw(t, "n")
		id := ck.OutputID(job, fencingToken(token), n)
		require.NoError(t, ident.ValidateID(id))
		prefix := ck.AttemptPrefix(job, fencingToken(token))
		require.True(t, strings.HasPrefix(ck.ObjectKey(id), prefix))
		require.NoError(t, ck.Tombstone{Kind: ck.TombstonePrefix, Target: prefix}.Validate())
		// Another token's outputs never fall under this attempt's prefix.
		other := ck.OutputID(job, fencingToken(token+1), n)
		require.False(t, strings.HasPrefix(ck.ObjectKey(other), prefix))
	})
}

func TestSanitizeName(t *testing.T) {
	require.Equal(t, "acme_corp_", ident.SanitizeName("acme corp/", 64))
	require.Equal(t, "abc", ident.SanitizeName("abcdef", 3))
	require.NoError(t, ident.ValidateJobName("L0-"+ident.SanitizeName("ünïcode tenant", 32)+"-1"))
}

// TestChangeReasonEncoding checks that encoding version 2 writes a
// change's reason whether or not it is set, that version 1 (the compact
// form) writes a change without a reason as seven fields and refuses eight
// with an empty reason, and that reasons are accepted only where they
// belong.
func TestChangeReasonEncoding(t *testing.T) {
	c := ck.Change{Kind: ck.ChangeFail, Job: "j", Version: 1, Token: 2, Worker: "w"}
	u := ck.PlanUpdate{Changes: []ck.Change{c}}
	plain, err := u.MarshalBinary()
	require.NoError(t, err)
	plain1, err := ck.EncodeVersion1(&u)
	require.NoError(t, err)
	u.Changes[0].Reason = "disk full"
	withReason, err := u.MarshalBinary()
	require.NoError(t, err)
	withReason1, err := ck.EncodeVersion1(&u)
	require.NoError(t, err)
	require.Len(t, withReason, len(plain)+len("disk full"), "version 2: the reason's field is written either way")
	require.Len(t, withReason1, len(plain1)+1+len("disk full"), "version 1: an unset reason is left out")
	for _, data := range [][]byte{withReason, withReason1} {
		var back ck.PlanUpdate
		require.NoError(t, back.UnmarshalBinary(data))
		require.Equal(t, "disk full", back.Changes[0].Reason)
	}

	// Version 1: eight fields with an empty reason is not a canonical
	// encoding.
	i := bytes.Index(withReason1, []byte("\x69disk full"))
	require.Positive(t, i)
	bad := append(append(append([]byte{}, withReason1[:i]...), 0x60), withReason1[i+10:]...)
	var back ck.PlanUpdate
	require.ErrorIs(t, back.UnmarshalBinary(bad), ck.ErrMalformed)

	for _, k := range []ck.ChangeKind{ck.ChangeRenew, ck.ChangeRelease, ck.ChangeComplete} {
		c := ck.Change{Kind: k, Job: "j", Version: 1, Token: 2, Worker: "w", Reason: "x"}
		require.ErrorIs(t, c.Validate(), ident.ErrInconsistent, k)
	}
	long := ck.Change{Kind: ck.ChangeFail, Job: "j", Version: 1, Token: 2, Worker: "w", Reason: strings.Repeat("x", ident.MaxReasonLen+1)}
	require.ErrorIs(t, long.Validate(), ck.ErrTooLarge)
	require.NoError(t, (&ck.Change{Kind: ck.ChangeFail, Job: "j", Version: 1, Token: 2, Worker: "w", Reason: ident.ClipReason(long.Reason + "\xff")}).Validate())
}

// TestValidateNoAllocation checks that validating well-formed values
// allocates nothing (the state machine validates every block, plan and
// change it decodes; an error's context is built only on error), and that
// a bad name's error still names what it belongs to.
func TestValidateNoAllocation(t *testing.T) {
	b := validBlock()
	plan := ck.JobPlan{Name: "j", Tenant: "acme", Tombstones: []ck.Tombstone{{Kind: ck.TombstoneBlock, Target: "old"}}}
	for i := range 20 { // a level-0 job's sources
		plan.Sources = append(plan.Sources, fmt.Sprintf("01JD8ZQ8Y0S1G6N9V3C2X7K%03d", i))
	}
	renew := ck.Change{Kind: ck.ChangeRenew, Job: "j", Version: 3, Token: 7, Worker: "worker-1"}
	assign := ck.Change{Kind: ck.ChangeAssign, Job: "j", Version: 3, Worker: "worker-1"}
	for name, v := range map[string]interface{ Validate() error }{"block": &b, "plan": &plan, "renew": &renew, "assign": &assign} {
		require.NoError(t, v.Validate(), name)
		require.Zero(t, testing.AllocsPerRun(100, func() { _ = v.Validate() }), name)
	}
	bad := ck.Change{Kind: ck.ChangeAssign, Job: "j", Worker: "w\x01"}
	require.ErrorIs(t, bad.Validate(), ident.ErrInvalidID)
	require.ErrorContains(t, bad.Validate(), `assign j: worker "w\x01": invalid characters`)
	b.Tenant = "a\x00"
	require.ErrorContains(t, b.Validate(), `block 01JD8ZQ8Y0S1G6N9V3C2X7K4PB: tenant "a\x00": invalid characters`)
	plan.Tenant = "a\x00"
	require.ErrorContains(t, plan.Validate(), `job j: tenant "a\x00": invalid characters`)
}
