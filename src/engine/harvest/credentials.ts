// Credential scanning for harvested code and values: API keys, tokens, private
// keys, passwords in URLs and password-like assignments, keys split over
// concatenated string literals, and the value of any secret-looking variable
// of this process's environment. A finding either drops the sample or is
// redacted (and the sample re-verified); both are counted. The sample store
// runs the same scan over every record it is given (findSecrets), whatever
// built it.

export interface CredentialRule {
  kind: string;
  pattern: RegExp;
  /** Extra check on the match (e.g. entropy) to keep false positives out. */
  accept?: (match: RegExpExecArray) => boolean;
  /** The part of the match to replace (default: the whole match). */
  secretGroup?: number;
}

/** Shannon entropy in bits per character: real secrets are random, placeholders are not. */
export function entropy(text: string): number {
  if (!text) return 0;
  const counts = new Map<string, number>();
  for (const ch of text) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / text.length;
    h -= p * Math.log2(p);
  }
  return h;
}

const PLACEHOLDER = /^(REDACTED_\w+|x+|\*+|\.+|changeme|password|secret|example|dummy|test|<[^>]*>|\$\{[^}]*\}|%\(?\w*\)?s|\{\w*\})$/i;

/**
 * A name that holds a password: one with password / passwd / passphrase in it,
 * or a `_`-separated part that is `pass` or `pwd` (db_pass, PWD_ADMIN); not
 * bypass, compass or passed. Names that describe a password rather than hold
 * one (password_length, PASSWORD_PROMPT, password_env) are left out.
 */
function isPasswordName(name: string): boolean {
  const lower = name.toLowerCase();
  const parts = lower.split('_').filter(Boolean);
  const holds = /pass(?:word|wd|phrase)/.test(lower) || parts.some((p) => p === 'pass' || p === 'pwd');
  if (!holds) return false;
  const last = parts[parts.length - 1] ?? '';
  return !DESCRIBES_PASSWORD.has(last) && !/(?:length|label|prompt|field|hint|policy|pattern)$/.test(lower);
}
const DESCRIBES_PASSWORD = new Set([
  'len',
  'length',
  'min',
  'max',
  'label',
  'prompt',
  'field',
  'hint',
  'policy',
  'pattern',
  're',
  'regex',
  'format',
  'fmt',
  'msg',
  'message',
  'text',
  'help',
  'title',
  'placeholder',
  'env',
  'var',
  'name',
  'file',
  'path',
  'url',
  'key',
  'column',
  'col',
  'widget',
  'input',
  'mode',
  'type',
  'rules',
  'chars',
  'count',
]);

/**
 * A short, low-entropy password assigned to a password name: `password =
 * "hunter2"`, `PASSWD = 'letmein'`, `db_pass: str = "..."`, `password="x1y2"`
 * as a keyword, `"password": "..."` in a dict. The entropy rule above would let
 * these through; the name is the evidence here.
 */
const PASSWORD_LITERAL: CredentialRule = {
  kind: 'password_literal',
  pattern: /\b([A-Za-z_][A-Za-z0-9_]*)['"]?\s*(?::\s*[A-Za-z_][\w.[\], ]*?\s*)?(?::|=(?!=))\s*[rbuRBU]?(['"])([^'"\s]{4,})\2/g,
  secretGroup: 3,
  accept: (m) => isPasswordName(m[1] ?? '') && !isNotAPassword(m[3] ?? ''),
};
/** Values that are not passwords: placeholders, templates, prompts, paths, environment variable names. */
function isNotAPassword(value: string): boolean {
  return PLACEHOLDER.test(value) || /[:{}%]$|^[$%]|^(?:\/|~\/|\.\.?\/)/.test(value) || /^[A-Z][A-Z0-9]*_[A-Z0-9_]*$/.test(value);
}
export const CREDENTIAL_RULES: CredentialRule[] = [
  { kind: 'private_key', pattern: /-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g },
  { kind: 'aws_access_key', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g },
  {
    kind: 'aws_secret_key',
    pattern: /aws_?secret_?(?:access_?)?key['"]?\s*[:=]\s*['"]?([A-Za-z0-9/+=]{40})\b/gi,
    secretGroup: 1,
  },
  { kind: 'github_token', pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{50,})\b/g },
  { kind: 'openai_key', pattern: /\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b/g, accept: (m) => entropy(m[0]) > 3.5 },
  { kind: 'stripe_key', pattern: /\b[rs]k_live_[0-9a-zA-Z]{20,}\b/g },
  { kind: 'slack_token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}\b/g },
  { kind: 'google_api_key', pattern: /\bAIza[0-9A-Za-z_-]{35}\b/g },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\b/g },
  {
    kind: 'url_password',
    pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s/:@'"]+:([^\s/@'"]+)@/gi,
    secretGroup: 1,
    accept: (m) => !PLACEHOLDER.test(m[1] ?? ''),
  },
  {
    kind: 'password_assignment',
    pattern:
      /\b(?:password|passwd|pwd|secret|api_?key|apikey|access_?token|auth_?token|client_secret|private_key)\b['"]?\s*[:=]\s*[rbuf]?(['"])([^'"\s]{8,})\1/gi,
    secretGroup: 2,
    accept: (m) => !isNotAPassword(m[2] ?? '') && entropy(m[2] ?? '') >= 3,
  },
  PASSWORD_LITERAL,
];

/** One-line string literals (an optional r/b/u/f prefix, either quote, backslash escapes). */
const STRING_LITERAL = /(?<![A-Za-z0-9_])[rRbBuUfF]{0,2}(["'])((?:\\.|(?!\1)[^\\\n])*)\1/g;

/**
 * Credentials split over string literals joined with `+` or by adjacency
 * (`"sk-" + "abc..."`, `"ghp_" "xxxx"`, over lines inside brackets): the
 * literals' contents are joined and scanned with the token rules; a finding
 * covers the whole concatenation.
 */
function scanSplitLiterals(text: string, rules: CredentialRule[]): CredentialFinding[] {
  const literals: { start: number; end: number; quote: string; body: string }[] = [];
  STRING_LITERAL.lastIndex = 0;
  for (let m = STRING_LITERAL.exec(text); m; m = STRING_LITERAL.exec(text)) {
    literals.push({ start: m.index, end: m.index + m[0].length, quote: m[1]!, body: m[2]! });
  }
  const tokenRules = rules.filter((r) => r !== PASSWORD_LITERAL);
  const findings: CredentialFinding[] = [];
  for (let i = 0; i < literals.length;) {
    let j = i;
    while (j + 1 < literals.length && /^\s*\+?\s*$/.test(text.slice(literals[j]!.end, literals[j + 1]!.start))) j++;
    if (j > i) {
      const joined = literals
        .slice(i, j + 1)
        .map((l) => l.body)
        .join('');
      const kinds = scanCredentials(joined, tokenRules, false).map((f) => f.kind);
      if (kinds.length > 0) {
        const start = literals[i]!.start;
        findings.push({ kind: kinds[0]!, index: start, length: literals[j]!.end - start, literal: literals[i]!.quote });
      }
    }
    i = j + 1;
  }
  return findings;
}

/** Environment variable names that hold secrets (not GIT_AUTHOR_NAME, which only contains AUTH). */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH/i;
const NOT_SECRET_NAME = /AUTHOR/i;

/** A secret of this process's environment: the variable's name (safe to print) and its value. */
export interface EnvironmentSecret {
  name: string;
  value: string;
}

/**
 * The values of the secret-looking variables of `env` (names with KEY, TOKEN,
 * SECRET, PASSWORD, PASSWD, CREDENTIAL or AUTH; values of 8 characters or
 * more): whatever their shape, none may appear in a sample.
 */
export function environmentSecrets(env: NodeJS.ProcessEnv): EnvironmentSecret[] {
  const out: EnvironmentSecret[] = [];
  for (const [name, raw] of Object.entries(env)) {
    const value = raw?.trim();
    if (!value || value.length < 8 || !SECRET_NAME.test(name) || NOT_SECRET_NAME.test(name)) continue;
    out.push({ name, value });
  }
  // Longest first: a value that contains another is found (and redacted) whole.
  return out.sort((a, b) => b.value.length - a.value.length);
}

/**
 * Every credential in `text`: the rules (scanCredentials) and each value of
 * `secrets` wherever it occurs (kind `environment_secret`). The one scan the
 * harvest pipeline and the sample store both run.
 */
export function findSecrets(text: string, secrets: readonly EnvironmentSecret[] = []): CredentialFinding[] {
  const found = scanCredentials(text);
  const extra: CredentialFinding[] = [];
  for (const { value } of secrets) {
    for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + value.length)) {
      extra.push({ kind: 'environment_secret', index: at, length: value.length });
    }
  }
  return extra.length === 0 ? found : mergeFindings([...found, ...extra]);
}

export interface CredentialFinding {
  kind: string;
  /** Offset and length of the secret in the scanned text (never the secret itself). */
  index: number;
  length: number;
  /**
   * Set when the span is a whole concatenation of string literals
   * (`"sk-" + "..."`): redaction writes one literal in this quote.
   */
  literal?: string;
}

/** Finds credentials in `text`; the findings never carry the secret text. */
export function scanCredentials(text: string, rules: CredentialRule[] = CREDENTIAL_RULES, splitLiterals = true): CredentialFinding[] {
  const findings: CredentialFinding[] = splitLiterals ? scanSplitLiterals(text, rules) : [];
  for (const rule of rules) {
    rule.pattern.lastIndex = 0;
    for (let m = rule.pattern.exec(text); m; m = rule.pattern.exec(text)) {
      if (m[0].length === 0) {
        rule.pattern.lastIndex += 1;
        continue;
      }
      if (rule.accept && !rule.accept(m)) continue;
      const secret = rule.secretGroup ? (m[rule.secretGroup] ?? m[0]) : m[0];
      const offset = rule.secretGroup ? m[0].indexOf(secret) : 0;
      findings.push({ kind: rule.kind, index: m.index + Math.max(0, offset), length: secret.length });
    }
  }
  return mergeFindings(findings);
}

/** Overlapping findings (a key inside a URL) count once, the earliest longest first. */
function mergeFindings(findings: CredentialFinding[]): CredentialFinding[] {
  findings.sort((a, b) => a.index - b.index || b.length - a.length);
  const merged: CredentialFinding[] = [];
  for (const f of findings) {
    const last = merged[merged.length - 1];
    if (last && f.index < last.index + last.length) continue;
    merged.push(f);
  }
  return merged;
}

/** Replaces every finding with `REDACTED_<KIND>` (a plain word, so string literals stay valid). */
export function redactCredentials(text: string, findings: CredentialFinding[] = scanCredentials(text)): string {
  let out = text;
  for (const f of [...findings].sort((a, b) => b.index - a.index)) {
    const word = `REDACTED_${f.kind.toUpperCase()}`;
    out = `${out.slice(0, f.index)}${f.literal ? `${f.literal}${word}${f.literal}` : word}${out.slice(f.index + f.length)}`;
  }
  return out;
}
