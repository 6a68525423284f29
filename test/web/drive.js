#!/usr/bin/env node
// Drives Debian's headless Chromium (/usr/bin/chromium, or $AMP_CHROMIUM)
// through puppeteer-core for the dashboard's tests (test/36-dashboard-
// admin.bats), make screenshots and share/bench-dashboard-browser.sh:
//
//   drive.js text URL            the page's title, visible text and facts as JSON
//   drive.js rows URL            the task ids of the visible task rows (or cards), one a line
//   drive.js live URL NEEDLE MS  prints "ready" once URL is open, then waits up to MS
//                                for NEEDLE in the page's text; exit 0 (printing
//                                the wait and whether the page was reloaded) or 1
//   drive.js follow URL SELECTOR...
//                                clicks each SELECTOR's first match in turn (a link);
//                                then the visible task rows' ids, one a line, and a
//                                last line "url" TAB the page's URL; the page's log to
//                                stderr
//   drive.js visible URL SELECTOR ATTR [COUNT]
//                                ATTR of each element matching SELECTOR that is
//                                shown (laid out), one a line; with COUNT, a tab and
//                                how many of its descendants match COUNT (rect: bars)
//   drive.js axe URL...          axe-core on each page: its serious and critical
//                                violations as JSON; exit 1 when there is one
//   drive.js shot URL FILE W H   a screenshot of the whole page at W x H
//   drive.js timing URL          milliseconds to the load event and to the first
//                                contentful paint, as JSON
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const puppeteer = require('puppeteer-core');

const chromium = process.env.AMP_CHROMIUM || '/usr/bin/chromium';

async function open(width, height) {
	const dir = fs.mkdtempSync(path.join(process.env.BATS_TEST_TMPDIR || os.tmpdir(), 'chromium-'));
	const browser = await puppeteer.launch({
		executablePath: chromium,
		headless: true,
		userDataDir: dir,
		args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
		defaultViewport: { width: width || 1400, height: height || 900 },
	});
	const page = await browser.newPage();
	// AMP_WEB_NOSCRIPT=1: a browser with scripts off
	if (process.env.AMP_WEB_NOSCRIPT === '1')
		await page.setJavaScriptEnabled(false);
	const log = [];
	page.on('console', (m) => log.push(`console ${m.type()}: ${m.text()}`));
	page.on('pageerror', (e) => log.push(`pageerror: ${e.message}`));
	page.on('dialog', (d) => { log.push(`dialog: ${d.message()}`); d.dismiss(); });
	return { browser, page, log, dir };
}

async function close(b) {
	await b.browser.close();
	fs.rmSync(b.dir, { recursive: true, force: true });
}

// What a page shows, and whether anything of a message ran.
async function facts(page) {
	return page.evaluate(() => ({
		title: document.title,
		text: document.body.innerText,
		pwned: document.body.hasAttribute('data-pwned') || document.title === 'pwned',
		scripts: Array.from(document.scripts).map((s) => s.src || '(inline)'),
		images: document.images.length,
	}));
}

const commands = {
	async text(url) {
		const b = await open();
		await b.page.goto(url, { waitUntil: 'load' });
		const f = await facts(b.page);
		f.log = b.log;
		process.stdout.write(JSON.stringify(f, null, 1) + '\n');
		await close(b);
	},
	async rows(url) {
		const b = await open();
		await b.page.goto(url, { waitUntil: 'load' });
		// the task rows of a table, the cards of a filter page
		const ids = await b.page.evaluate(() => Array.from(document.querySelectorAll('tr.task, div.needs'))
			.filter((e) => e.getClientRects().length > 0)
			.map((e) => (e.querySelector('td') || e.querySelector('p')).innerText.split(' ')[0]));
		process.stdout.write(ids.map((i) => i + '\n').join(''));
		await close(b);
	},
	async follow(url, ...selectors) {
		const b = await open();
		await b.page.goto(url, { waitUntil: 'load' });
		for (const sel of selectors) {
			await b.page.click(sel);
			await new Promise((r) => setTimeout(r, 100));
		}
		const ids = await b.page.evaluate(() => Array.from(document.querySelectorAll('tr.task'))
			.filter((e) => e.getClientRects().length > 0)
			.map((e) => e.querySelector('td').innerText.split(' ')[0]));
		const href = await b.page.evaluate(() => location.href);
		process.stdout.write(ids.map((i) => i + '\n').join('') + 'url\t' + href + '\n');
		process.stderr.write(b.log.map((l) => l + '\n').join(''));
		await close(b);
	},
	async visible(url, selector, attr, count) {
		const b = await open();
		await b.page.goto(url, { waitUntil: 'load' });
		const out = await b.page.evaluate((sel, a, c) => Array.from(document.querySelectorAll(sel))
			.filter((e) => e.getClientRects().length > 0)
			.map((e) => e.getAttribute(a) + (c ? '\t' + e.querySelectorAll(c).length : '')),
		selector, attr, count || '');
		process.stdout.write(out.map((l) => l + '\n').join(''));
		await close(b);
	},
	async live(url, needle, ms) {
		const b = await open();
		let navigations = 0;
		b.page.on('framenavigated', (fr) => { if (fr === b.page.mainFrame()) navigations++; });
		await b.page.goto(url, { waitUntil: 'load' });
		await b.page.evaluate(() => { window.ampNoReload = 1; });
		navigations = 0;
		process.stdout.write('ready\n');
		const t0 = Date.now();
		let ok = true;
		try {
			await b.page.waitForFunction((n) => document.body.innerText.includes(n),
				{ timeout: Number(ms), polling: 100 }, needle);
		} catch (e) {
			ok = false;
		}
		const kept = await b.page.evaluate(() => window.ampNoReload === 1);
		const f = await facts(b.page);
		process.stdout.write(JSON.stringify({ found: ok, waited_ms: Date.now() - t0,
			reloaded: !kept || navigations > 0, pwned: f.pwned, log: b.log }) + '\n');
		await close(b);
		process.exitCode = ok ? 0 : 1;
	},
	async axe(...urls) {
		const source = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
		const b = await open();
		const out = {};
		let bad = 0;
		for (const url of urls) {
			// axe is the auditor's script, not the page's: it goes in
			// past the page's policy, which allows none.
			await b.page.setBypassCSP(true);
			await b.page.goto(url, { waitUntil: 'load' });
			await b.page.evaluate(source);
			const r = await b.page.evaluate(() => window.axe.run(document, {
				runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] },
			}));
			const v = r.violations.filter((x) => x.impact === 'serious' || x.impact === 'critical')
				.map((x) => ({ id: x.id, impact: x.impact, help: x.help,
					nodes: x.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
			out[url] = { violations: v, passes: r.passes.length,
				minor: r.violations.filter((x) => x.impact === 'minor' || x.impact === 'moderate').map((x) => x.id) };
			bad += v.length;
		}
		process.stdout.write(JSON.stringify(out, null, 1) + '\n');
		await close(b);
		process.exitCode = bad ? 1 : 0;
	},
	async shot(url, file, w, h) {
		const b = await open(Number(w), Number(h));
		await b.page.goto(url, { waitUntil: 'load' });
		await b.page.screenshot({ path: file, fullPage: false });
		await close(b);
	},
	async timing(url) {
		const b = await open();
		const t0 = Date.now();
		await b.page.goto(url, { waitUntil: 'load' });
		const wall = Date.now() - t0;
		const t = await b.page.evaluate(() => {
			const nav = performance.getEntriesByType('navigation')[0];
			const fcp = performance.getEntriesByName('first-contentful-paint')[0];
			return { load_ms: nav ? nav.loadEventEnd - nav.startTime : null,
				dom_ms: nav ? nav.domContentLoadedEventEnd - nav.startTime : null,
				fcp_ms: fcp ? fcp.startTime : null,
				bytes: document.documentElement.outerHTML.length,
				rows: document.querySelectorAll('tr.task').length };
		});
		t.wall_ms = wall;
		process.stdout.write(JSON.stringify(t) + '\n');
		await close(b);
	},
};

const [cmd, ...args] = process.argv.slice(2);
if (!commands[cmd]) {
	process.stderr.write('usage: drive.js text|rows|follow|visible|live|axe|shot|timing URL ...\n');
	process.exit(2);
}
commands[cmd](...args).catch((e) => {
	process.stderr.write(`drive.js ${cmd}: ${e.stack || e}\n`);
	process.exit(3);
});
