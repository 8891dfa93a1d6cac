package sim

import (
	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// checkPressure checks, from cluster version 6, ARCHITECTURE.md's promise
// that a tenant's backpressure grade is judged whenever its queue changes:
// every tenant's grade is the one its policy gives its queue as it is now
// (a grade is its own successor under an unchanged load, hysteresis
// included). The simulation's thresholds count queued blocks, which
// change only with the queue; thresholds on ready batches, which also
// change as batches age, are not checked here.
func (m *model) checkPressure(f *raftfsm.FSM, st *raftfsm.Stats) {
	if f.ClusterVersion() < 6 {
		return
	}
	blocks := map[string]int64{}
	var tenants []string
	for _, ts := range f.Tenants() {
		if _, ok := blocks[ts.Tenant]; !ok {
			tenants = append(tenants, ts.Tenant)
		}
		blocks[ts.Tenant] += int64(ts.Queued)
	}
	for _, p := range st.Pressure {
		if _, ok := blocks[p.Tenant]; !ok {
			tenants = append(tenants, p.Tenant)
			blocks[p.Tenant] = 0
		}
	}
	for _, t := range tenants {
		p := m.policyOf(t)
		if p.Pressure.SlowReadyBatches != (policy.Limit{}) || p.Pressure.StopReadyBatches != (policy.Limit{}) {
			continue
		}
		// The windows as Apply last judged them (see model.judged).
		held := !p.MayStart(m.judged) || policy.ClosedLevels(p.LevelRuns, m.judged) != 0
		g := f.Pressure(t, nil)
		if want := p.Pressure.Next(g, policy.Load{Blocks: blocks[t]}, held); want != g {
			m.fail("backpressure", "tenant %q graded %s with %d blocks queued (window holds %t), its thresholds %+v grade %s", t, g, blocks[t], held, p.Pressure, want)
		}
	}
}
