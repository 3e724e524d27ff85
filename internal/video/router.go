package video

import (
	"fmt"

	"mediagen/internal/routing"
)

// Breaker states, as the metric mediagen_upstream_breaker_state reports them (routing).
const (
	BreakerClosed   = routing.BreakerClosed
	BreakerOpen     = routing.BreakerOpen
	BreakerHalfOpen = routing.BreakerHalfOpen
)

// Router is the accounts' health routed tasks pick from; it lives in internal/routing,
// shared with speech.
type Router = routing.Router

// NewBreakerState registers the breaker gauge on reg (routing.NewBreakerState).
var NewBreakerState = routing.NewBreakerState

// order is routing.Order.
var order = routing.Order

// skipped names why accounts were passed over, for the task's event.
type skipped []string

func (s *skipped) add(account, why string) { *s = append(*s, fmt.Sprintf("%s %s", account, why)) }
