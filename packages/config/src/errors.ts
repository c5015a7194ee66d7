// The one error the loader throws. Each issue says where the bad value came from (a file line or
// an environment variable) and which key, so a message is enough to find and fix it.

export interface ConfigIssue {
  /** `config.toml:12`, `config.toml` when no line applies, or `env CG__TOOLS__CONCURRENCY`. */
  readonly source: string;
  /** Dotted key such as `tools.concurrency`; empty when the problem is the whole file. */
  readonly key: string;
  readonly message: string;
}

export function formatIssue(issue: ConfigIssue): string {
  return issue.key
    ? `${issue.source}: ${issue.key}: ${issue.message}`
    : `${issue.source}: ${issue.message}`;
}

/** A configuration that cannot be used; the message lists every issue, one per line. */
export class ConfigError extends Error {
  readonly code = 'invalid_config' as const;
  readonly issues: readonly ConfigIssue[];
  constructor(issues: readonly ConfigIssue[], options: { cause?: unknown } = {}) {
    super(
      issues.map(formatIssue).join('\n'),
      options.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = 'ConfigError';
    this.issues = issues;
  }
}
