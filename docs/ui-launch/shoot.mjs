// Screenshots of the README's UI launch path (issue 23), taken against a running `make dev`.
// Not part of CI. Needs Chromium (Debian: chromium) and playwright-core (npm i playwright-core):
//   node docs/ui-launch/shoot.mjs http://127.0.0.1:3000 docs/ui-launch
import { chromium } from 'playwright-core';

const [base, dir] = process.argv.slice(2);
const yaml = `ops:
  drive_session:
    config:
      question: "What are the health effects of drinking coffee?"
      budget:
        usd: "0.50"
`;
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
const shot = async (name) => {
  await page.waitForTimeout(2000);
  await page.screenshot({ path: `${dir}/${name}.png` });
};
const skipNux = async () => {
  const skip = page.getByRole('button', { name: 'Skip' });
  if (await skip.count()) await skip.click();
};
await page.goto(`${base}/jobs`, { waitUntil: 'networkidle' });
await page.waitForTimeout(2000);
await skipNux();
await shot('1-jobs');
await page.getByRole('link', { name: 'research_session' }).first().click();
await page.waitForTimeout(1500);
await page.getByRole('tab', { name: 'Launchpad' }).click();
await page.waitForTimeout(6000); // the launchpad validates the scaffolded config
await shot('2-launchpad-refuses-empty-config');
await page.evaluate((y) => {
  const cm = [...document.querySelectorAll('.CodeMirror')].pop().CodeMirror;
  cm.setValue(y);
}, yaml);
await page.waitForTimeout(4000);
await shot('3-launchpad-config');
const launched = Date.now();
await page.getByRole('button', { name: /Launch Run/ }).click();
await page.waitForURL(/\/runs\//, { timeout: 60000 });
const runUrl = page.url();
let text = '';
for (let i = 0; i < 300; i++) {
  await page.waitForTimeout(2000);
  text = await page.locator('body').innerText();
  if (/RUN_SUCCESS|RUN_FAILURE/.test(text)) break;
}
const seconds = (Date.now() - launched) / 1000;
await page.goto(runUrl, { waitUntil: 'networkidle' });
await page.waitForFunction(() => !document.body.innerText.includes('Loading run logs'), null,
  { timeout: 60000 });
await page.getByPlaceholder('Filter…').fill('session');
await shot('4-research-session-run');
const sid = (text.match(/session (\d{8}-[0-9a-f]{6})/) || [])[1];
if (sid) {
  await page.goto(`${base}/assets/report?partition=${sid}`, { waitUntil: 'networkidle' });
  await page.waitForTimeout(4000);
  await shot('5-report-asset');
}
console.log(JSON.stringify({ run: runUrl, session: sid, seconds_to_done: seconds }));
await browser.close();
