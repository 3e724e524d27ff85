package console

import (
	jsonv2 "github.com/go-json-experiment/json"

	"mediagen/internal/contract"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// playable is a video task's result as both consoles play it: the contract's view of the task
// (video.View, the public API's own reading of the result) and the links a page needs.
type playable struct {
	View contract.VideoTask
	// Result is the played file's signed link and Poster its first frame's ("" when none).
	Result, Poster string
	// Deleted: the result's files were deleted (DELETE /v1/videos/{id}).
	Deleted bool
}

// playableOf reads task's result with links (nil links: nothing is linked).
func playableOf(task store.Task, links video.Linker) playable {
	p := playable{View: video.View(task, links)}
	if md := p.View.Metadata; md != nil {
		p.Result = md.URL
		if p.Result == "" {
			p.Result = md.VideoURL
		}
	}
	p.Deleted = p.View.DeletedAt != 0
	if p.Result != "" && links != nil {
		var res video.Result
		if err := jsonv2.Unmarshal(task.Result, &res); err == nil && res.ThumbnailKey != "" && res.DeletedAt == 0 {
			p.Poster = links.Link(res.ThumbnailKey)
		}
	}
	return p
}
