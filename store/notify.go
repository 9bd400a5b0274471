package store

import "context"

// Notifier is the optional capability of a store to say when a run was
// written, so that a follower ("stratum watch") reads it again only then
// instead of polling. The PostgreSQL store implements it with
// LISTEN/NOTIFY; the file store does not (followers poll it).
type Notifier interface {
	// Watch returns a channel that receives a value after each
	// acknowledged write of runID (several writes may give one value),
	// from the moment Watch returns until ctx ends. The channel is closed
	// when ctx ends or the notifications stop (the connection was lost);
	// a follower then falls back to polling.
	Watch(ctx context.Context, runID string) (<-chan struct{}, error)
}
