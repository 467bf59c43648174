// Browser check of the built report: load it from disk (file://) in headless Chromium, assert the
// main table's rows and columns, fail on any console error or failed request, save a screenshot.
//
// Usage: node check.mjs <site dir> <expected rows JSON> <expected columns JSON> <screenshot.png>
// Exit code 0 when every check holds, 1 with a message otherwise.
import { chromium } from 'playwright-core';
import { pathToFileURL } from 'node:url';
import path from 'node:path';

const [siteDir, rowsJson, columnsJson, screenshot] = process.argv.slice(2);
if (!siteDir || !rowsJson || !columnsJson || !screenshot) {
  console.error('usage: node check.mjs <site dir> <rows JSON> <columns JSON> <screenshot.png>');
  process.exit(2);
}
const expectedRows = JSON.parse(rowsJson);
const expectedColumns = JSON.parse(columnsJson);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';

const problems = [];
const browser = await chromium.launch({
  executablePath,
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
try {
  for (const [page_path, viewport] of [
    ['billing_credit/index.html', { width: 1280, height: 900 }],
    ['billing_credit/index.html', { width: 390, height: 844 }],
    ['index.html', { width: 1280, height: 900 }],
    ['billing_credit/ids.html', { width: 1280, height: 900 }],
  ]) {
    const context = await browser.newContext({ viewport });
    const page = await context.newPage();
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(`${page_path}: console error: ${msg.text()}`);
    });
    page.on('pageerror', (err) => problems.push(`${page_path}: page error: ${err.message}`));
    page.on('requestfailed', (req) => problems.push(`${page_path}: request failed: ${req.url()}`));
    const url = pathToFileURL(path.resolve(siteDir, page_path)).href;
    const response = await page.goto(url, { waitUntil: 'load' });
    if (!response || !response.ok()) problems.push(`${page_path}: could not load ${url}`);
    const scripts = await page.locator('script').count();
    if (scripts !== 0) problems.push(`${page_path}: has ${scripts} script element(s)`);
    const sheets = await page.evaluate(() => document.styleSheets.length);
    if (sheets < 1) problems.push(`${page_path}: the stylesheet did not load`);

    if (page_path === 'billing_credit/index.html') {
      const headers = await page.locator('#matrix thead th').allInnerTexts();
      const columns = headers.slice(1).map((s) => s.trim());
      if (JSON.stringify(columns) !== JSON.stringify(expectedColumns)) {
        problems.push(`columns: expected ${JSON.stringify(expectedColumns)}, found ${JSON.stringify(columns)}`);
      }
      const rows = (await page.locator('#matrix tbody tr th').allInnerTexts()).map((s) => s.replace(/\s+/g, ' ').trim());
      if (JSON.stringify(rows) !== JSON.stringify(expectedRows)) {
        problems.push(`rows: expected ${JSON.stringify(expectedRows)}, found ${JSON.stringify(rows)}`);
      }
      const cellsPerRow = await page.locator('#matrix tbody tr').evaluateAll((trs) => trs.map((tr) => tr.querySelectorAll('td').length));
      if (!cellsPerRow.every((n) => n === expectedColumns.length)) {
        problems.push(`every row should have ${expectedColumns.length} cells, found ${JSON.stringify(cellsPerRow)}`);
      }
      const svg = await page.locator('svg.chart').count();
      if (svg !== 1) problems.push(`expected one timing chart, found ${svg}`);
      // Readable on a phone: the page itself does not scroll sideways (wide tables scroll in their box).
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      if (overflow > 1) problems.push(`${viewport.width}px wide: the page scrolls sideways by ${overflow}px`);
      if (viewport.width === 1280) await page.screenshot({ path: screenshot, fullPage: true });
      else await page.screenshot({ path: screenshot.replace(/\.png$/, '-phone.png'), fullPage: true });
    }
    await context.close();
  }
} finally {
  await browser.close();
}
if (problems.length > 0) {
  for (const p of problems) console.error(p);
  process.exit(1);
}
console.log(`browser check passed; screenshot ${screenshot}`);
