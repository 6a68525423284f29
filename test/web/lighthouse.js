#!/usr/bin/env node
// Lighthouse (npm lighthouse, with Debian's headless Chromium) on each URL:
// prints one JSON line per URL, {"url", "accessibility", "best_practices"}
// (scores 0..100) and the audits that cost points; exit 1 when a score is
// under MIN (default 90).  Usage: lighthouse.js [--min N] URL...
'use strict';

async function main(argv) {
	let min = 90;
	if (argv[0] === '--min') {
		min = Number(argv[1]);
		argv = argv.slice(2);
	}
	const { default: lighthouse } = await import('lighthouse');
	const launcher = await import('chrome-launcher');
	const chrome = await launcher.launch({
		chromePath: process.env.AMP_CHROMIUM || '/usr/bin/chromium',
		chromeFlags: ['--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
	});
	let low = 0;
	try {
		for (const url of argv) {
			const r = await lighthouse(url, {
				port: chrome.port, output: 'json', logLevel: 'error',
				onlyCategories: ['accessibility', 'best-practices'],
			});
			const cat = r.lhr.categories;
			const lost = Object.values(r.lhr.audits)
				.filter((a) => a.score !== null && a.score < 1 && a.scoreDisplayMode === 'binary')
				.map((a) => a.id);
			const out = { url, accessibility: Math.round(cat.accessibility.score * 100),
				best_practices: Math.round(cat['best-practices'].score * 100), lost };
			if (out.accessibility < min || out.best_practices < min)
				low++;
			process.stdout.write(JSON.stringify(out) + '\n');
		}
	} finally {
		await chrome.kill();
	}
	process.exitCode = low ? 1 : 0;
}

main(process.argv.slice(2)).catch((e) => {
	process.stderr.write(`lighthouse.js: ${e.stack || e}\n`);
	process.exit(3);
});
