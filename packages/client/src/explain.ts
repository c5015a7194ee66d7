// What a refused NATS connection or an unknown stream means, in words that name the fix: the
// SDK and the CLI say the same.

/**
 * Says what a refused or failed NATS connection means and what fixes it. `credsFile` is the
 * credential the connection used, if any.
 */
export function explainNatsConnectError(
  err: unknown,
  url: string,
  credsFile: string | undefined,
): string {
  const e = err as Error & { code?: string };
  const message = e.message ?? String(err);
  if (e.name === 'AuthorizationError' || /authorization violation/i.test(message)) {
    if (credsFile === undefined) {
      return (
        `the NATS server at ${url} wants a credential (Authorization Violation): pass a project's ` +
        'bus credential with --bus-creds or TOOLMESH_BUS_CREDS (`toolmesh bus-credentials create` ' +
        'issues one), or, to use a running `pnpm stack`, leave NATS_URL unset: toolmesh then ' +
        "finds the stack's server and credential"
      );
    }
    return (
      `the NATS server at ${url} refused the credential ${credsFile} (Authorization Violation): ` +
      'it was revoked, or it belongs to another deployment; issue a new one with ' +
      '`toolmesh bus-credentials create`'
    );
  }
  const cause = (e.cause as { code?: string; message?: string } | undefined) ?? undefined;
  const why = cause?.code ?? e.code ?? cause?.message ?? message;
  return `cannot connect to NATS at ${url}: ${message}${why !== message ? ` (${why})` : ''}`;
}

/** Says what "no stream captures <subject>" means on the server at `url`. */
export function explainNoStream(message: string, url: string, root: string): string {
  return (
    `${message}: the NATS server at ${url} holds no toolmesh stream for it. It is not a ` +
    `toolmesh deployment's server (another nats-server on this machine?), its subject root is ` +
    `not "${root}" (--root / TOOLMESH_SUBJECT_ROOT), or its services have not started yet. ` +
    'With `pnpm stack` running, leave NATS_URL unset: toolmesh finds the stack on its own'
  );
}
