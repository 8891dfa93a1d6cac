package raftfsm

// follow brings the scheduler and the planner in line with the policies
// of the tenants named (and of every tenant without its own policy, when
// all is set), and re-grades their backpressure.
func (st *state) follow(now int64, tenants []string, all bool) {
	ps := st.policies
	for _, t := range tenants {
		st.regrade(t, now)
	}
	if all {
		for _, t := range ps.gradeList() {
			st.regrade(t.Tenant, now)
		}
	}
}
