// Browser check of the built site: load one page of every kind from disk (file://) in headless
// Chromium at 1280 px and on a 390 px phone viewport; fail on a console error, a failed request,
// a script element, a missing stylesheet, sideways scrolling of the page itself, or any serious
// or critical axe-core violation; check what each kind must show first; save a screenshot of
// every page at both widths.
//
// Usage: node check.mjs <site dir> <spec JSON> <screenshot prefix>
//   spec: {"pages": [{"kind": "report", "path": "billing_credit/index.html"}, ...],
//          "rows": ["crash / outage", ...], "columns": ["no_check", ...]}
// Screenshots: <prefix>-<kind>-1280.png and <prefix>-<kind>-390.png.
// Exit code 0 when every check holds, 1 with a message per problem otherwise.
import { chromium } from 'playwright-core';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [siteDir, specJson, prefix] = process.argv.slice(2);
if (!siteDir || !specJson || !prefix) {
  console.error('usage: node check.mjs <site dir> <spec JSON> <screenshot prefix>');
  process.exit(2);
}
const spec = JSON.parse(specJson);
const axePath = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const viewports = [{ width: 1280, height: 900 }, { width: 390, height: 844 }];

const problems = [];
const written = [];
const axeSummary = {};
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});

async function pageChecks(page, kind, where, width) {
  if (kind === 'index') {
    for (const href of spec.indexLinks || []) {
      if ((await page.locator(`a[href="${href}"]`).count()) === 0) problems.push(`${where}: no link to ${href}`);
    }
  }
  if (kind === 'report') {
    const headers = await page.locator('#matrix thead th').allInnerTexts();
    const columns = headers.slice(1).map((s) => s.trim());
    if (JSON.stringify(columns) !== JSON.stringify(spec.columns)) {
      problems.push(`${where}: columns: expected ${JSON.stringify(spec.columns)}, found ${JSON.stringify(columns)}`);
    }
    const rows = (await page.locator('#matrix tbody tr th').allInnerTexts()).map((s) => s.replace(/\s+/g, ' ').trim());
    if (JSON.stringify(rows) !== JSON.stringify(spec.rows)) {
      problems.push(`${where}: rows: expected ${JSON.stringify(spec.rows)}, found ${JSON.stringify(rows)}`);
    }
    const cellsPerRow = await page.locator('#matrix tbody tr').evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td').length));
    if (!cellsPerRow.every((n) => n === spec.columns.length)) {
      problems.push(`${where}: every row should have ${spec.columns.length} cells, found ${JSON.stringify(cellsPerRow)}`);
    }
    if ((await page.locator('svg.chart').count()) < 1) problems.push(`${where}: no timing chart`);
    // The Verdict comes before the matrix.
    const verdictFirst = await page.evaluate(() => {
      const v = document.getElementById('verdict');
      const m = document.getElementById('matrix');
      return !!v && !!m && (v.compareDocumentPosition(m) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0;
    });
    if (!verdictFirst) problems.push(`${where}: the Verdict is not above the matrix`);
  }
  if (kind === 'nemesis' && width === 1280) {
    // The compact table fits without scrolling sideways at 1280 px.
    const over = await page.locator('table.nemesis-table').evaluate((t) => t.scrollWidth - t.parentElement.clientWidth);
    if (over > 1) problems.push(`${where}: the nemesis table is ${over}px wider than its box`);
    if ((await page.locator('table.heat').count()) !== 1) problems.push(`${where}: no heat map`);
  }
  if (kind.startsWith('trial') && (await page.locator('svg.timeline').count()) !== 1) {
    problems.push(`${where}: no timeline chart`);
  }
  if (kind === 'receipt') {
    const lede = await page.locator('p.key').first().innerText();
    if (!/pinned|self-attested|none/.test(lede)) problems.push(`${where}: the key's status is not stated at the top`);
  }
}

try {
  for (const { kind, path: pagePath } of spec.pages) {
    for (const viewport of viewports) {
      const where = `${kind} (${pagePath}) at ${viewport.width}px`;
      const context = await browser.newContext({ viewport });
      const page = await context.newPage();
      page.on('console', (msg) => {
        if (msg.type() === 'error') problems.push(`${where}: console error: ${msg.text()}`);
      });
      page.on('pageerror', (err) => problems.push(`${where}: page error: ${err.message}`));
      page.on('requestfailed', (req) => problems.push(`${where}: request failed: ${req.url()}`));
      const url = pathToFileURL(path.resolve(siteDir, pagePath)).href;
      const response = await page.goto(url, { waitUntil: 'load' });
      if (!response || !response.ok()) problems.push(`${where}: could not load ${url}`);
      const scripts = await page.locator('script').count();
      if (scripts !== 0) problems.push(`${where}: has ${scripts} script element(s)`);
      const sheets = await page.evaluate(() => document.styleSheets.length);
      if (sheets < 1) problems.push(`${where}: the stylesheet did not load`);
      // Readable on a phone: the page itself never scrolls sideways (wide tables and figures
      // scroll inside their own box).
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (overflow > 1) problems.push(`${where}: the page scrolls sideways by ${overflow}px`);
      await pageChecks(page, kind, where, viewport.width);
      const shot = `${prefix}-${kind}-${viewport.width}.png`;
      await page.screenshot({ path: shot, fullPage: true });
      written.push(shot);
      // Accessibility, after the checks above (axe is injected only for this test).
      await page.addScriptTag({ path: axePath });
      const result = await page.evaluate(async () => {
        // eslint-disable-next-line no-undef
        const r = await axe.run(document, { resultTypes: ['violations'], preload: false });
        return r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.length, help: v.help, target: v.nodes[0]?.target?.join(' ') }));
      });
      const counts = axeSummary[kind] || (axeSummary[kind] = { serious: 0, critical: 0, moderate: 0, minor: 0 });
      for (const v of result) {
        counts[v.impact] = (counts[v.impact] || 0) + v.nodes;
        if (v.impact === 'serious' || v.impact === 'critical') {
          problems.push(`${where}: axe ${v.impact} ${v.id} on ${v.nodes} node(s), first ${v.target}: ${v.help}`);
        }
      }
      await context.close();
    }
  }
} finally {
  await browser.close();
}
console.log(`axe-core violations per page kind (nodes, both widths): ${JSON.stringify(axeSummary)}`);
console.log(`screenshots:\n${written.join('\n')}`);
if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
console.log('browser check passed');
