// Credential scanning for harvested code and values: API keys, tokens, private
// keys, passwords in URLs and password-like assignments. A finding either drops
// the sample or is redacted (and the sample re-verified); both are counted.

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
    pattern: /\b(?:password|passwd|pwd|secret|api_?key|apikey|access_?token|auth_?token|client_secret|private_key)\b['"]?\s*[:=]\s*[rbuf]?(['"])([^'"\s]{8,})\1/gi,
    secretGroup: 2,
    accept: (m) => !PLACEHOLDER.test(m[2] ?? '') && entropy(m[2] ?? '') >= 3,
  },
];

export interface CredentialFinding {
  kind: string;
  /** Offset and length of the secret in the scanned text (never the secret itself). */
  index: number;
  length: number;
}

/** Finds credentials in `text`; the findings never carry the secret text. */
export function scanCredentials(text: string, rules: CredentialRule[] = CREDENTIAL_RULES): CredentialFinding[] {
  const findings: CredentialFinding[] = [];
  for (const rule of rules) {
    rule.pattern.lastIndex = 0;
    for (let m = rule.pattern.exec(text); m; m = rule.pattern.exec(text)) {
      if (m[0].length === 0) {
        rule.pattern.lastIndex += 1;
        continue;
      }
      if (rule.accept && !rule.accept(m)) continue;
      const secret = rule.secretGroup ? m[rule.secretGroup] ?? m[0] : m[0];
      const offset = rule.secretGroup ? m[0].indexOf(secret) : 0;
      findings.push({ kind: rule.kind, index: m.index + Math.max(0, offset), length: secret.length });
    }
  }
  // Overlapping rules (a key inside a URL) count once, the earliest longest first.
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
    out = `${out.slice(0, f.index)}REDACTED_${f.kind.toUpperCase()}${out.slice(f.index + f.length)}`;
  }
  return out;
}
