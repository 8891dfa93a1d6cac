package worker

// SetAfterMerge makes every job of w call f after its merge returned and
// before the worker decides how the job ended. Call it before Run.
func SetAfterMerge(w *Worker, f func(job string)) { w.afterMerge = f }

// ConfigOf returns w's configuration, defaults filled in.
func ConfigOf(w *Worker) Config { return w.cfg }
