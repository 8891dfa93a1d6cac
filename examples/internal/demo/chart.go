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
	for l := range nlevels {
		pts := make(plotter.XYs, len(samples))
		for i, s := range samples {
			pts[i].X = s.At.Seconds()
			if l < len(s.Queued) {
				pts[i].Y = float64(s.Queued[l])
			}
			ymax = max(ymax, pts[i].Y)
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		line.Color = levelColors[l%len(levelColors)]
		line.Width = vg.Points(1.5)
		queue.Add(line)
		queue.Legend.Add(fmt.Sprintf("level %d", l), line)
	}
	jobs := make(plotter.XYs, len(samples))
	for i, s := range samples {
		jobs[i].X, jobs[i].Y = s.At.Seconds(), float64(s.Jobs)
		ymax = max(ymax, jobs[i].Y)
	}
	jl, err := plotter.NewLine(jobs)
	if err != nil {
		return err
	}
	jl.Color = color.Gray{Y: 0x70}
	jl.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
	queue.Add(jl)
	queue.Legend.Add("jobs", jl)
	tombs := make(plotter.XYs, len(samples))
	for i, s := range samples {
		tombs[i].X, tombs[i].Y = s.At.Seconds(), float64(s.Tombstones)
		ymax = max(ymax, tombs[i].Y)
	}
	tl, err := plotter.NewLine(tombs)
	if err != nil {
		return err
	}
	tl.Color = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	tl.Dashes = []vg.Length{vg.Points(1), vg.Points(2)}
	queue.Add(tl)
	queue.Legend.Add("objects awaiting deletion", tl)

	amp := plot.New()
	amp.X.Label.Text = "seconds since start"
	amp.Y.Label.Text = "objects read by a 1-hour query"
	pts := make(plotter.XYs, len(samples))
	var amax float64
	for i, s := range samples {
		pts[i].X, pts[i].Y = s.At.Seconds(), s.ReadAmp
		amax = max(amax, s.ReadAmp)
	}
	al, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	al.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	al.Width = vg.Points(1.5)
	al.FillColor = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0x30}
	amp.Add(al, plotter.NewGrid())
	amp.Legend.Top = true
	amp.Legend.Add("read amplification (mean over tenants)", al)

	xmax := samples[len(samples)-1].At.Seconds()
	for _, p := range []*plot.Plot{queue, amp} {
		p.X.Min, p.X.Max = 0, xmax
		p.Y.Min = 0
	}
	queue.Y.Max = max(1, ymax*1.1)
	amp.Y.Max = max(1, amax*1.1)
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
