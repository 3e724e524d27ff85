package video

import "encoding/json"

// UpstreamInfo is what a task's stored request and pipeline state say about its upstreams,
// for operators (docs/admin.md, "Support: finding a task"): the generation half's account,
// model and job id, and the enhancement half's (a production task has both; a standalone
// enhancement has only the enhancement half, on the alias's account).
type UpstreamInfo struct {
	Account, Model, Job                      string
	EnhanceAccount, EnhanceModel, EnhanceJob string
}

// Upstreams reads a task's upstream binding (its stored request) and job ids (its state).
// Unreadable documents give what could be read.
func Upstreams(request, state []byte) UpstreamInfo {
	var u UpstreamInfo
	var req Stored
	if json.Unmarshal(request, &req) != nil {
		return u
	}
	var st pipeState
	if len(state) > 0 && json.Unmarshal(state, &st) != nil {
		st = pipeState{}
	}
	// A routed task's accounts are the ones it was bound to (its state), not its alias's
	// first: the operator sees where its jobs are.
	u.Account, u.EnhanceModel = genAccount(req, st), req.EnhanceModel
	u.Model = req.modelOn(u.Account)
	u.EnhanceAccount = req.EnhanceUpstream
	if u.EnhanceModel != "" || st.EnhJob != "" {
		u.EnhanceAccount = enhAccount(req, st)
		u.EnhanceModel = req.enhanceModelOn(u.EnhanceAccount)
	}
	u.Job, u.EnhanceJob = st.GenJob, st.EnhJob
	return u
}
