package demo

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

var levelColors = []color.Color{
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// WriteChart draws the samples — blocks queued per level, and the read
// amplification of the one-hour query — as two stacked plots sharing the
// time axis, to path: SVG if it ends in .svg, else PNG. title heads the
// upper plot; marks (seconds) are drawn as vertical lines (leader
// shutdowns, say).
func WriteChart(path, title string, samples []Sample, marks []float64) error {
	if len(samples) == 0 {
		return fmt.Errorf("no samples to chart")
	}
	queue := plot.New()
	queue.Title.Text = title
	queue.Y.Label.Text = "blocks"
	queue.Legend.Top = true
	queue.X.Tick.Label.Color = color.Transparent
	nlevels := 0
	for _, s := range samples {
		nlevels = max(nlevels, len(s.Queued))
	}
	var ymax float64
	add := func(p *plot.Plot, name string, value func(Sample) float64, style func(*plotter.Line)) error {
		l, top, err := line(samples, value)
		if err != nil {
			return err
		}
		style(l)
		p.Add(l)
		p.Legend.Add(name, l)
		ymax = max(ymax, top)
		return nil
	}
	for l := range nlevels {
		err := add(queue, fmt.Sprintf("level %d", l), func(s Sample) float64 {
			if l < len(s.Queued) {
				return float64(s.Queued[l])
			}
			return 0
		}, func(ln *plotter.Line) {
			ln.Color = levelColors[l%len(levelColors)]
			ln.Width = vg.Points(1.5)
		})
		if err != nil {
			return err
		}
	}
	if err := add(queue, "jobs", func(s Sample) float64 { return float64(s.Jobs) }, func(l *plotter.Line) {
		l.Color = color.Gray{Y: 0x70}
		l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	}); err != nil {
		return err
	}
	if err := add(queue, "objects awaiting deletion", func(s Sample) float64 { return float64(s.Tombstones) }, func(l *plotter.Line) {
		l.Color = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
		l.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	}); err != nil {
		return err
	}
	queue.Y.Max = max(1, ymax*1.1)

	amp := plot.New()
	amp.X.Label.Text = "seconds since start"
	amp.Y.Label.Text = "objects read by a 1-hour query"
	amp.Add(plotter.NewGrid())
	amp.Legend.Top = true
	ymax = 0
	if err := add(amp, "read amplification (mean over tenants)", func(s Sample) float64 { return s.ReadAmp }, func(l *plotter.Line) {
		l.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
		l.Width = vg.Points(1.5)
		l.FillColor = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0x30}
	}); err != nil {
		return err
	}
	amp.Y.Max = max(1, ymax*1.1)

	xmax := samples[len(samples)-1].At.Seconds()
	for _, p := range []*plot.Plot{queue, amp} {
		p.X.Min, p.X.Max = 0, xmax
		p.Y.Min = 0
	}
	for _, m := range marks {
		for _, p := range []*plot.Plot{queue, amp} {
			top := p.Y.Max
			ml, err := plotter.NewLine(plotter.XYs{{X: m, Y: 0}, {X: m, Y: top}})
			if err != nil {
				return err
			}
			ml.Color = color.RGBA{R: 0x80, A: 0xff}
			ml.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
			p.Add(ml)
		}
	}

	w, h := 9*vg.Inch, 6*vg.Inch
	var canvas vg.CanvasWriterTo
	if strings.EqualFold(filepath.Ext(path), ".svg") {
		canvas = vgsvg.New(w, h)
	} else {
		canvas = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))}
	}
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	plots := [][]*plot.Plot{{queue}, {amp}}
	cv := plot.Align(plots, tiles, dc)
	queue.Draw(cv[0][0])
	amp.Draw(cv[1][0])

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := canvas.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// line draws one value of the samples over time; top is its largest
// value.
func line(samples []Sample, value func(Sample) float64) (l *plotter.Line, top float64, err error) {
	pts := make(plotter.XYs, len(samples))
	for i, s := range samples {
		pts[i].X, pts[i].Y = s.At.Seconds(), value(s)
		top = max(top, pts[i].Y)
	}
	l, err = plotter.NewLine(pts)
	return l, top, err
}
