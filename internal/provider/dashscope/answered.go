package dashscope

import "sync"

// maxAnswered bounds the creates a client remembers (a task id and its idempotency key, about
// 150 bytes each: 1.5 MB at the bound). It is far more than an account creates in the minutes
// a lost create's search looks back (findSkew plus a takeover's lease), so an answered task
// is still remembered when a search meets it; past the bound the oldest are forgotten, which
// only makes a search more cautious (an unexplained task fails the search's task, refunded).
const maxAnswered = 10_000

// answered remembers, in this process, which idempotency key each create this client saw
// answered was made for. DashScope's tasks carry nothing of the caller's, so this is what
// lets FindGeneration explain a task of the account's list: a task answered to this key is
// the key's own job (its answer arrived but was never recorded: adopt it); a task answered
// to another key is not this key's job. Another replica's creates are not known here.
type answered struct {
	mu    sync.Mutex
	byID  map[string]string // task id → idempotency key
	byKey map[string]string // idempotency key → task id
	order []string          // task ids, oldest first
}

func (a *answered) add(id, key string) {
	if key == "" {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byID == nil {
		a.byID, a.byKey = map[string]string{}, map[string]string{}
	}
	if _, ok := a.byID[id]; ok {
		return
	}
	if len(a.order) >= maxAnswered {
		old := a.order[0]
		a.order = a.order[1:]
		if k := a.byID[old]; a.byKey[k] == old {
			delete(a.byKey, k)
		}
		delete(a.byID, old)
	}
	a.byID[id] = key
	a.byKey[key] = id
	a.order = append(a.order, id)
}

// of is the task answered to key, if any.
func (a *answered) of(key string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id, ok := a.byKey[key]
	return id, ok
}

// other: the task was answered to a key other than key.
func (a *answered) other(id, key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	k, ok := a.byID[id]
	return ok && k != key
}
