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
	if json.Unmarshal(request, &req) == nil {
		u.Account, u.Model, u.EnhanceModel = req.Upstream, req.Model, req.EnhanceModel
		u.EnhanceAccount = req.EnhanceUpstream
		if u.EnhanceAccount == "" && u.EnhanceModel != "" {
			u.EnhanceAccount = req.Upstream
		}
	}
	var st pipeState
	if len(state) > 0 && json.Unmarshal(state, &st) == nil {
		u.Job, u.EnhanceJob = st.GenJob, st.EnhJob
		if st.EnhJob != "" && u.EnhanceAccount == "" {
			u.EnhanceAccount = req.Upstream
		}
	}
	return u
}
