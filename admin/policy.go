package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/compactkit/compactkit/policy"
	"github.com/compactkit/compactkit/raftfsm"
)

// Policies is the answer of GET api/policies: the default policy, the
// tenants' own and the compact-now requests in force. With ?limit=N it is
// one page of at most N tenants' own policies, by tenant name, after
// ?cursor= (a Next of an earlier page); every page carries the default and
// the compact-now requests.
type Policies struct {
	// LogTime is the log time at which Open is judged.
	LogTime string `json:"log_time"`
	// Default is the default policy (with no tenant), and Tenants the
	// tenants' own, each in the JSON form of policy.Tenant, with whether
	// it lets the tenant's new jobs start at the log's time.
	Default raftfsm.TenantPolicy   `json:"default"`
	Tenants []raftfsm.TenantPolicy `json:"tenants"`
	// CompactNow lists the compact-now requests still in force.
	CompactNow []CompactNow `json:"compact_now"`
	// Next is the cursor of the next page of tenants: absent on the last.
	Next string `json:"next,omitempty"`
}

// maxPolicyPage bounds the limit of a page of GET api/policies.
const maxPolicyPage = 10000

// CompactNow is a compact-now request in force: the blocks of Tenant
// (every tenant with All) at Level (every level when absent) queued up to
// Before are planned without waiting for their batches to fill or age.
type CompactNow struct {
	Tenant string  `json:"tenant"`
	All    bool    `json:"all,omitempty"`
	Level  *uint32 `json:"level,omitempty"`
	Before string  `json:"before"`
}

func (h *Handler) policiesOf(r *http.Request) (*Policies, error) {
	q := r.URL.Query()
	limit, err := queryInt(q, "limit", maxPolicyPage)
	if err != nil {
		return nil, err
	}
	after, paged := "", q.Has("cursor")
	if paged {
		// A cursor is the last tenant of a page, quoted: the empty
		// tenant is a tenant too.
		if after, err = strconv.Unquote(q.Get("cursor")); err != nil {
			return nil, badf("cursor %q is not one this API returned", q.Get("cursor"))
		}
	}
	f, err := h.svc.Read(r.Context())
	if err != nil {
		return nil, err
	}
	ps := f.Policies()
	tenants := ps.Tenants // by tenant name
	if paged {
		i, found := slices.BinarySearchFunc(tenants, after, func(t raftfsm.TenantPolicy, name string) int { return strings.Compare(t.Tenant, name) })
		if found {
			i++
		}
		tenants = tenants[i:]
	}
	next := ""
	if limit > 0 && len(tenants) > limit {
		tenants = tenants[:limit]
		next = strconv.Quote(tenants[limit-1].Tenant)
	}
	_, _, now := h.svc.FSM().LastApplied()
	out := &Policies{
		LogTime:    logTime(now),
		Default:    raftfsm.TenantPolicy{Open: ps.Default.MayStart(now), Policy: ps.Default},
		Tenants:    []raftfsm.TenantPolicy{},
		CompactNow: []CompactNow{},
	}
	out.Next = next
	out.Tenants = append(out.Tenants, tenants...)
	for _, c := range ps.CompactNow {
		cn := CompactNow{Tenant: c.Tenant, All: c.AllTenants, Before: logTime(c.Before)}
		if !c.AllLevels {
			level := c.Level
			cn.Level = &level
		}
		out.CompactNow = append(out.CompactNow, cn)
	}
	return out, nil
}

func (h *Handler) policies(r *http.Request) (any, error) { return h.policiesOf(r) }

// policyBody is the body of the policy commands: "policy-set" (tenant or
// all, and policy), "policy-clear" (tenant or all) and "compact-now"
// (tenant or all, and optionally level). Tenant is a pointer because the
// empty tenant (multi-tenant segments) is a tenant: exactly one of Tenant
// and All is given. The policy, in the JSON form of policy.Tenant, is
// decoded apart so that its errors name the command.
type policyBody struct {
	Tenant *string          `json:"tenant,omitempty"`
	All    bool             `json:"all,omitempty"`
	Level  *uint32          `json:"level,omitempty"`
	Policy *json.RawMessage `json:"policy,omitempty"`
}

var policyActions = map[string]raftfsm.PolicyAction{
	"policy-set": raftfsm.PolicySet, "policy-clear": raftfsm.PolicyClear, "compact-now": raftfsm.PolicyCompactNow,
}

// policyCommand converts the body of a policy command; its errors are the
// caller's (400).
func policyCommand(name string, action raftfsm.PolicyAction, c *policyBody) (raftfsm.PolicyCommand, error) {
	var out raftfsm.PolicyCommand
	if err := oneTenant(name, c.Tenant, c.All); err != nil {
		return out, err
	}
	out = raftfsm.PolicyCommand{Action: action, All: c.All, Level: c.Level}
	if c.Tenant != nil {
		out.Tenant = *c.Tenant
	}
	if c.Level != nil && action != raftfsm.PolicyCompactNow {
		return out, badf("%s: level is for compact-now only", name)
	}
	switch {
	case action == raftfsm.PolicySet && c.Policy == nil:
		return out, badf("%s: policy is required", name)
	case action != raftfsm.PolicySet && c.Policy != nil:
		return out, badf("%s: takes no policy", name)
	case c.Policy != nil:
		var p policy.Tenant
		if err := json.Unmarshal(*c.Policy, &p); err != nil {
			return out, badRequest{fmt.Errorf("%s: policy: %w", name, err)}
		}
		out.Policy = &p
	}
	return out, nil
}

func (h *Handler) policyCommand(w http.ResponseWriter, r *http.Request, name string, action raftfsm.PolicyAction) {
	var c policyBody
	h.propose(w, r, name, &c, func(by string) (*raftfsm.Command, []any, error) {
		cmd, err := policyCommand(name, action, &c)
		if err != nil {
			return nil, nil, err
		}
		cmd.By = by
		return &raftfsm.Command{Policy: &cmd}, []any{"tenant", cmd.Tenant, "all", cmd.All}, nil
	})
}
