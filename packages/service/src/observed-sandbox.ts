// A sandbox provider that reports what it does: the sandboxes this process holds open and
// created (by provider), and every exec as a span and a duration sample. The provider itself
// is untouched; the wrapper only observes, and passes every other method of a sandbox through.
import type { Sandbox, SandboxProvider } from '@toolmesh/sandbox';
import { SpanKind, metrics, withSpan } from '@toolmesh/telemetry';

export function observeSandboxes(provider: SandboxProvider): SandboxProvider {
  const labels = { provider: provider.kind };
  const wrap = (sb: Sandbox, created: boolean): Sandbox => {
    if (created) metrics.sandboxesCreated.inc(labels);
    metrics.sandboxesActive.inc(labels);
    let open = true;
    const gone = () => {
      if (open) metrics.sandboxesActive.dec(labels);
      open = false;
    };
    const observed: Sandbox = {
      id: sb.id,
      key: sb.key,
      workdir: sb.workdir,
      exec: (command, options) =>
        withSpan(
          'sandbox exec',
          { kind: SpanKind.CLIENT, attributes: { 'toolmesh.sandbox.provider': provider.kind } },
          async (span) => {
            const started = performance.now();
            let outcome = 'error';
            try {
              const r = await sb.exec(command, options);
              outcome = r.timedOut ? 'timeout' : r.exitCode === 0 ? 'ok' : 'nonzero';
              span.setAttribute('process.exit.code', r.exitCode ?? -1);
              return r;
            } finally {
              const seconds = (performance.now() - started) / 1000;
              metrics.sandboxExecDuration.observe({ ...labels, outcome }, seconds);
            }
          },
        ),
      spawn: (command, options) => sb.spawn(command, options),
      interact: (command, options) => sb.interact(command, options),
      putFile: (path, data) => sb.putFile(path, data),
      getFile: (path, options) => sb.getFile(path, options),
      ...(sb.endpointOf ? { endpointOf: (port: number) => sb.endpointOf!(port) } : {}),
      ...(sb.grantRead ? { grantRead: (hostPath: string) => sb.grantRead!(hostPath) } : {}),
      close: async () => {
        await sb.close();
        gone();
      },
      destroy: async () => {
        await sb.destroy();
        gone();
      },
    };
    // Whatever the provider grants later (a skill's environment) shows through, as on `sb`.
    if ('readPaths' in sb) {
      Object.defineProperty(observed, 'readPaths', { get: () => sb.readPaths, enumerable: true });
    }
    return observed;
  };
  return {
    kind: provider.kind,
    create: async (options) => wrap(await provider.create(options), true),
    open: async (id) => {
      const sb = await provider.open(id);
      return sb ? wrap(sb, false) : undefined;
    },
    destroy: (id) => provider.destroy(id),
    close: () => provider.close(),
  };
}
