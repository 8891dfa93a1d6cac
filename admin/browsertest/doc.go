// Package browsertest drives the admin status page in a real headless
// browser (Chromium, through the DevTools protocol with chromedp): the
// page loads under its Content-Security-Policy without console errors or
// CSP violations, shows the numbers the API returns,
// a pause issued from the page takes effect, and scheduling policies set
// through the API show on the page (policies open or closed, backpressure
// grades, staleness alarms) as the API reports them. It is a nested module so
// that the core module never depends on a browser driver; its tests find
// the browser on PATH (chromium, chromium-browser, google-chrome) or in
// $CHROME, and fail without one when COMPACTKIT_REQUIRE_BROWSER is set
// (CI installs Debian's chromium) — otherwise they skip, saying so.
package browsertest
