/**
 * Deterministic, text-like benchmark states: customer support tickets (a header and a thread of
 * customer / agent messages) and long business documents (numbered sections of clauses). Built
 * from word lists and sentence templates with a seeded PRNG, so a seed gives the same text on every
 * machine, and the text tokenizes like prose (varied words, numbers, names, punctuation) instead of
 * repeated filler, which would tokenize unrealistically.
 */
import { Rng } from '../src/models/builder/rng.js';

/** A small wrapper over the builder's PRNG (xoshiro128**) with the helpers text generation needs. */
export class TextRng {
  private readonly rng: Rng;

  constructor(seed: number, stream: string) {
    this.rng = new Rng(seed, stream);
  }

  /** Uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + (this.rng.nextU32() % (hi - lo + 1));
  }

  pick<T>(xs: readonly T[]): T {
    return xs[this.rng.nextU32() % xs.length]!;
  }

  chance(p: number): boolean {
    return this.rng.nextU32() / 0x100000000 < p;
  }

  /** `count` distinct items of `xs`. */
  sample<T>(xs: readonly T[], count: number): T[] {
    const copy = [...xs];
    for (let i = copy.length - 1; i > 0; i--) {
      const j = this.rng.nextU32() % (i + 1);
      [copy[i], copy[j]] = [copy[j]!, copy[i]!];
    }
    return copy.slice(0, count);
  }
}

const FIRST = ['Maria', 'James', 'Aisha', 'Wei', 'Lucas', 'Priya', 'Tom', 'Elena', 'Kwame', 'Sofia', 'Daniel', 'Yuki', 'Omar', 'Hannah', 'Mateo', 'Chloe', 'Ivan', 'Fatima', 'Noah', 'Grace', 'Ravi', 'Lena', 'Diego', 'Amara'];
const LAST = ['Okafor', 'Smith', 'Nakamura', 'Garcia', 'Novak', 'Patel', 'Müller', 'Rossi', 'Andersen', 'Kim', 'Dubois', 'Silva', 'Cohen', 'Kowalski', 'Osei', 'Larsen', 'Moreau', 'Haddad', 'Fischer', 'Brennan'];
const AGENTS = ['Tom', 'Jana', 'Samir', 'Beth', 'Marco', 'Lin', 'Chris', 'Ngozi'];
const COMPANIES = ['Northwind Logistics', 'Bluebird Dental', 'Acme Analytics', 'Greenleaf Grocers', 'Harbor & Finch LLP', 'Kestrel Robotics', 'Lumen Schools', 'Orchid Travel', 'Pinecrest Clinic', 'Summit Builders'];
const PRODUCTS = [
  { name: 'Router X200', versions: ['firmware 4.2.1', 'firmware 4.3.0', 'firmware 3.9.8'] },
  { name: 'CloudSync Pro', versions: ['desktop app 7.1', 'desktop app 7.2.3', 'web client'] },
  { name: 'PayDesk POS terminal', versions: ['model T2', 'model T3 Plus'] },
  { name: 'HomeCam 360', versions: ['app 2.14 on Android', 'app 2.15 on iOS'] },
  { name: 'LedgerLite accounting', versions: ['cloud edition', 'on-premise 2024.2'] },
  { name: 'FitBand Active', versions: ['band firmware 1.8', 'band firmware 2.0'] },
];
const PLANS = ['Free', 'Basic', 'Plus', 'Business', 'Enterprise'];
const CHANNELS = ['email', 'web form', 'chat', 'phone callback', 'social media'];
const PRIORITIES = ['low', 'normal', 'high', 'urgent'];
const WEEKDAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const TIMES_OF_DAY = ['every evening', 'around noon', 'since last Tuesday', 'twice this week', 'after the latest update', 'whenever more than three people are online', 'every morning at about 8', 'only on weekends'];
const SYMPTOMS = [
  'the connection drops for a few minutes and then comes back',
  'the app freezes on the login screen',
  'I was charged twice for the same month',
  'the invoice shows a plan we never ordered',
  'the device restarts by itself',
  'sync stops halfway and shows error code {code}',
  'the card reader declines cards that work everywhere else',
  'the camera feed is black although the light is on',
  'reports export with the wrong currency',
  'the battery is empty after a single day',
  'my password reset email never arrives',
  'the order status has said "processing" for {days} days',
];
const ACTIONS = [
  'I restarted the device and unplugged it for ten minutes',
  'I reinstalled the app twice',
  'I cleared the browser cache and tried another browser',
  'I checked the cables and they are fine',
  'our IT person reset it to factory settings',
  'I followed the troubleshooting guide on your website',
  'I tried it on a second phone with the same result',
  'I updated to the newest version yesterday',
];
const FEELINGS = [
  'This is really frustrating because we depend on it for our daily work.',
  'Honestly I am running out of patience.',
  'Thanks in advance for your help, I know you are busy.',
  'We are a small team and this costs us real money every day.',
  'If this cannot be fixed this week I would like to cancel and get a refund.',
  'Not urgent, but I would appreciate an answer when you can.',
  'This is the third time I am writing about this.',
  'Otherwise I am happy with the product, so I hope we can sort it out.',
];
const AGENT_LINES = [
  'Thank you for reaching out and for the details, {name}.',
  'I am sorry for the trouble this has caused.',
  'Could you send me a screenshot of the error and the serial number on the back of the device?',
  'I have checked your account and I can see the charge of {amount} on {date}.',
  'Our engineers are aware of an issue with {version} and a fix is planned for next week.',
  'As a workaround, please disable the automatic update setting and restart once more.',
  'I have issued a credit of {amount} to your account; it will show on the next invoice.',
  'I escalated this to our second-level team, who will contact you within two business days.',
  'Please confirm whether the problem also happens when only one device is connected.',
  'Could you tell me which browser and operating system you are using?',
];
const FOLLOW_UPS = [
  'I tried what you suggested, but nothing changed.',
  'The workaround helped for a day, then it started again.',
  'Here is the serial number: {serial}. I attached the screenshot.',
  'Thanks, that fixed it! You can close the ticket.',
  'I still have not received the credit you promised.',
  'It is {browser} on {os}, fully up to date.',
  'Yes, it happens even with a single device connected.',
  'Can someone please call me instead? My number is in my profile.',
];
const BROWSERS = ['Chrome 126', 'Firefox 128', 'Safari 17', 'Edge 125'];
const OSES = ['Windows 11', 'macOS 14', 'Ubuntu 24.04', 'Android 14', 'iOS 17'];

function fill(template: string, rng: TextRng, vars: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, key: string) => {
    if (key in vars) return vars[key]!;
    switch (key) {
      case 'code': return `E-${rng.int(100, 999)}`;
      case 'days': return String(rng.int(3, 21));
      case 'amount': return `$${rng.int(9, 480)}.${String(rng.int(0, 99)).padStart(2, '0')}`;
      case 'date': return isoDate(rng);
      case 'serial': return `SN${rng.int(100000, 999999)}-${rng.pick(['A', 'B', 'C', 'K'])}`;
      case 'browser': return rng.pick(BROWSERS);
      case 'os': return rng.pick(OSES);
      default: return key;
    }
  });
}

function isoDate(rng: TextRng): string {
  return `2026-${String(rng.int(1, 12)).padStart(2, '0')}-${String(rng.int(1, 28)).padStart(2, '0')}`;
}

function clock(rng: TextRng): string {
  return `${String(rng.int(7, 22)).padStart(2, '0')}:${String(rng.int(0, 59)).padStart(2, '0')}`;
}

/**
 * A support ticket as an endless sequence of pieces: the header first, then thread messages.
 * The caller stops taking pieces at its token target.
 */
export function* ticketPieces(rng: TextRng): Generator<string> {
  const first = rng.pick(FIRST);
  const last = rng.pick(LAST);
  const company = rng.pick(COMPANIES);
  const product = rng.pick(PRODUCTS);
  const version = rng.pick(product.versions);
  const symptom = fill(rng.pick(SYMPTOMS), rng, {});
  const vars = { name: first, version: `${product.name} ${version}` };
  yield [
    `Ticket TK-${rng.int(10000, 99999)} | opened ${isoDate(rng)} ${clock(rng)} | channel: ${rng.pick(CHANNELS)} | priority: ${rng.pick(PRIORITIES)}`,
    `Customer: ${first} ${last} <${first.toLowerCase()}.${last.toLowerCase().replace(/[^a-z]/g, '')}@${company.toLowerCase().replace(/[^a-z]/g, '')}.com>, ${company}, ${rng.pick(PLANS)} plan, customer since ${rng.int(2014, 2025)}`,
    `Product: ${product.name} (${version})`,
    `Subject: ${symptom.charAt(0).toUpperCase()}${symptom.slice(1).replace(/^I /, 'Customer ')}`,
    '',
  ].join('\n');
  yield `\nMessage from ${first} (${rng.pick(WEEKDAYS)} ${clock(rng)}):\nHello, ${rng.pick(TIMES_OF_DAY)} ${symptom}. ${rng.pick(ACTIONS)}, but it did not help. ${rng.pick(FEELINGS)}\n`;
  for (let turn = 0; ; turn++) {
    const agent = rng.pick(AGENTS);
    const lines = rng.sample(AGENT_LINES, rng.int(2, 3)).map((l) => fill(l, rng, vars));
    yield `\nReply from agent ${agent} (${rng.pick(WEEKDAYS)} ${clock(rng)}):\n${lines.join(' ')}\n`;
    const reply = rng.sample(FOLLOW_UPS, rng.int(1, 2)).map((l) => fill(l, rng, vars));
    const extra = rng.chance(0.5) ? ` ${rng.pick(ACTIONS)}.` : '';
    yield `\nMessage from ${first} (${rng.pick(WEEKDAYS)} ${clock(rng)}):\n${reply.join(' ')}${extra} ${rng.pick(FEELINGS)}\n`;
  }
}

const DOC_KINDS = [
  { title: 'Master Services Agreement', code: 'MSA' },
  { title: 'Data Processing Addendum', code: 'DPA' },
  { title: 'Vendor Security Assessment', code: 'VSA' },
  { title: 'Commercial Lease Agreement', code: 'LSE' },
  { title: 'Software License Agreement', code: 'LIC' },
];
const JURISDICTIONS = ['the State of New York', 'England and Wales', 'the Province of Ontario', 'the State of Delaware', 'Germany', 'Singapore'];
const SECTION_TITLES = [
  'Definitions', 'Scope of Services', 'Term and Renewal', 'Fees and Payment', 'Service Levels', 'Confidentiality',
  'Data Protection', 'Security Measures', 'Subprocessors', 'Intellectual Property', 'Warranties', 'Indemnification',
  'Limitation of Liability', 'Insurance', 'Audit Rights', 'Termination', 'Effects of Termination', 'Force Majeure',
  'Governing Law and Disputes', 'Notices', 'Assignment', 'Miscellaneous',
];
const CLAUSES = [
  '{a} shall provide the Services described in each Order Form with reasonable skill and care and in accordance with good industry practice.',
  'The initial term is {n} months from the Effective Date and renews automatically for successive periods of {m} months unless either party gives {d} days written notice.',
  '{b} shall pay all undisputed invoices within {d} days of receipt; late amounts bear interest at {p} percent per month.',
  'Fees are fixed for the first {m} months and may thereafter be increased once per year by no more than {p} percent.',
  '{a} shall use commercially reasonable efforts to make the platform available {sla} percent of the time in each calendar month, excluding scheduled maintenance.',
  'If availability falls below the target, {b} is entitled to a service credit of {p} percent of the monthly fee for each full percentage point of shortfall.',
  'Each party shall keep the other party\'s Confidential Information secret and use it only to perform its obligations under this Agreement.',
  'Confidentiality obligations survive for {n} years after termination, and indefinitely for trade secrets.',
  '{a} processes Personal Data only on documented instructions from {b}, including with regard to transfers to a third country.',
  '{a} shall notify {b} without undue delay, and in any event within {h} hours, after becoming aware of a Personal Data Breach.',
  'Personal Data is stored in data centres located in {region} and is encrypted at rest using AES-256 and in transit using TLS 1.2 or higher.',
  '{a} maintains an information security program certified to ISO/IEC 27001 and undergoes an annual SOC 2 Type II audit.',
  'Access to production systems requires multi-factor authentication and is reviewed every {m} months.',
  '{a} may engage subprocessors listed in Annex {annex}; it shall give {b} at least {d} days notice of any intended change.',
  'All intellectual property rights in the platform remain with {a}; {b} retains all rights in its own data.',
  '{a} warrants that the Services will perform materially in accordance with the Documentation.',
  '{a} shall defend and indemnify {b} against third-party claims alleging that the Services infringe any patent, copyright or trade mark.',
  'Except for breaches of confidentiality, each party\'s total liability is limited to the fees paid in the {m} months preceding the claim.',
  'Neither party is liable for indirect, consequential or special damages, or for loss of profits, revenue or goodwill.',
  '{a} shall maintain professional liability insurance with a limit of not less than {money} per claim.',
  '{b} may audit compliance once per year on {d} days notice, at its own cost, during normal business hours.',
  'Either party may terminate this Agreement for material breach that is not cured within {d} days of written notice.',
  '{b} may terminate for convenience on {d} days notice, subject to payment of fees for the remainder of the committed term.',
  'Upon termination {a} shall make the Customer Data available for export for {d} days and then delete it.',
  'Neither party is responsible for delays caused by events beyond its reasonable control, including natural disasters, war and acts of government.',
  'This Agreement is governed by the laws of {law}, and the courts of {law} have exclusive jurisdiction.',
  'Notices must be in writing and are deemed received when delivered by hand or by courier to the address in the Order Form.',
  'Neither party may assign this Agreement without the prior written consent of the other party, not to be unreasonably withheld.',
  'This Agreement is the entire agreement between the parties and supersedes all prior proposals and understandings.',
  'In the event of a conflict, the Order Form prevails over this Agreement, and this Agreement prevails over the Documentation.',
];
const REGIONS = ['the European Union', 'the United States', 'Canada', 'the United Kingdom', 'Singapore'];

/** A long business document as an endless sequence of pieces: title block first, then sections. */
export function* documentPieces(rng: TextRng): Generator<string> {
  const kind = rng.pick(DOC_KINDS);
  const [supplier, customer] = rng.sample(COMPANIES, 2) as [string, string];
  const law = rng.pick(JURISDICTIONS);
  const vars = { a: 'the Supplier', b: 'the Customer', law, region: rng.pick(REGIONS) };
  const pick = (template: string) =>
    template
      .replace(/\{n\}/g, () => String(rng.int(2, 7)))
      .replace(/\{m\}/g, () => String(rng.pick([6, 12, 24, 36])))
      .replace(/\{d\}/g, () => String(rng.pick([10, 14, 30, 45, 60, 90])))
      .replace(/\{h\}/g, () => String(rng.pick([24, 48, 72])))
      .replace(/\{p\}/g, () => String(rng.pick([1, 1.5, 2, 3, 5, 7])))
      .replace(/\{sla\}/g, () => rng.pick(['99.5', '99.9', '99.95']))
      .replace(/\{annex\}/g, () => rng.pick(['A', 'B', 'C', '2', '3']))
      .replace(/\{money\}/g, () => `${rng.pick(['USD', 'EUR', 'GBP'])} ${rng.int(1, 10)},000,000`)
      .replace(/\{(\w+)\}/g, (_, key: string) => (vars as Record<string, string>)[key] ?? key);
  const clauseText = (t: string) => {
    const s = pick(t);
    return s.charAt(0).toUpperCase() + s.slice(1);
  };
  yield [
    kind.title.toUpperCase(),
    `Reference ${kind.code}-${rng.int(2020, 2026)}-${rng.int(100, 999)}, version ${rng.int(1, 4)}.${rng.int(0, 9)}`,
    `Between ${supplier} ("the Supplier") and ${customer} ("the Customer"), effective ${isoDate(rng)}.`,
    '',
  ].join('\n');
  const titles = rng.sample(SECTION_TITLES, SECTION_TITLES.length);
  for (let s = 0; ; s++) {
    const title = titles[s % titles.length]!;
    const clauses = rng.sample(CLAUSES, rng.int(3, 5));
    const body = clauses.map((c, i) => `${s + 1}.${i + 1} ${clauseText(c)}`).join('\n');
    yield `\n${s + 1}. ${title}\n${body}\n`;
  }
}

/**
 * Takes pieces until the text reaches `targetTokens` (counted by the model's tokenizer): the
 * result is the first prefix of pieces at or above the target.
 */
export async function textOfTokens(
  pieces: Iterator<string>,
  targetTokens: number,
  countTokens: (text: string) => Promise<number>,
): Promise<string> {
  let text = '';
  for (;;) {
    const next = pieces.next();
    if (next.done) return text;
    text += next.value;
    // ~4 characters per token for English: ask the tokenizer only near the target.
    if (text.length >= targetTokens * 3 && (await countTokens(text)) >= targetTokens) return text.trimEnd();
  }
}
