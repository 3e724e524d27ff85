package console

import (
	"fmt"
	"math"
)

// Chart is a stacked bar chart drawn on the server as SVG, with its numbers as a table: one
// bar per label (a day, an hour), one colour per series (a route, an alias). Values are
// plain numbers; Format shows them in the table and the bars' tooltips.
type Chart struct {
	ID, Title string
	RowHead   string   // the table's first column heading ("Day")
	Labels    []string // one per bar, oldest first
	Series    []string
	// Values[i][j] is label i's value for series j.
	Values [][]float64
	Format func(float64) string
	// Open shows the table unfolded (pages where the numbers matter as much as the picture).
	Open bool
}

// Geometry of the SVG's coordinate space; it is scaled to the page's width by CSS.
const (
	chartW = 720
	chartH = 200
)

// ChartRect is one bar segment.
type ChartRect struct {
	X, Y, W, H float64
	Series     int
	Label      string
}

// ChartRow is one row of the chart's table.
type ChartRow struct {
	Label string
	Cells []string
	Total string
}

// Width and Height are the SVG's viewBox.
func (c Chart) Width() int  { return chartW }
func (c Chart) Height() int { return chartH }

func (c Chart) format(v float64) string {
	if c.Format != nil {
		return c.Format(v)
	}
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// Empty reports a chart with nothing to draw.
func (c Chart) Empty() bool {
	for _, row := range c.Values {
		for _, v := range row {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// Rects lays out the stacked bars, scaled to the tallest bar.
func (c Chart) Rects() []ChartRect {
	max := 0.0
	for _, row := range c.Values {
		sum := 0.0
		for _, v := range row {
			sum += math.Max(v, 0)
		}
		max = math.Max(max, sum)
	}
	if max == 0 || len(c.Labels) == 0 {
		return nil
	}
	slot := float64(chartW) / float64(len(c.Labels))
	gap := math.Min(slot*0.2, 4)
	var out []ChartRect
	for i, row := range c.Values {
		y := float64(chartH)
		for j, v := range row {
			if v <= 0 {
				continue
			}
			h := v / max * (chartH - 4)
			y -= h
			out = append(out, ChartRect{X: round2(float64(i)*slot + gap/2), Y: round2(y), W: round2(slot - gap), H: round2(h),
				Series: j % 8, Label: fmt.Sprintf("%s · %s: %s", c.Labels[i], c.Series[j], c.format(v))})
		}
	}
	return out
}

// Rows is the table: one row per label, newest first (the one a person looks for).
func (c Chart) Rows() []ChartRow {
	out := make([]ChartRow, 0, len(c.Labels))
	for i := len(c.Labels) - 1; i >= 0; i-- {
		row := ChartRow{Label: c.Labels[i]}
		total := 0.0
		for j := range c.Series {
			v := 0.0
			if i < len(c.Values) && j < len(c.Values[i]) {
				v = c.Values[i][j]
			}
			total += v
			row.Cells = append(row.Cells, c.format(v))
		}
		row.Total = c.format(total)
		out = append(out, row)
	}
	return out
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }

// Scale is the value of the chart's full height (the tallest bar), for the axis label.
func (c Chart) Scale() string {
	max := 0.0
	for _, row := range c.Values {
		sum := 0.0
		for _, v := range row {
			sum += math.Max(v, 0)
		}
		max = math.Max(max, sum)
	}
	return c.format(max)
}

// First and Last are the labels of the chart's first and last bar, for the time axis.
func (c Chart) First() string {
	if len(c.Labels) == 0 {
		return ""
	}
	return c.Labels[0]
}

// Last is the last bar's label.
func (c Chart) Last() string {
	if len(c.Labels) == 0 {
		return ""
	}
	return c.Labels[len(c.Labels)-1]
}
