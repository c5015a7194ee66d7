export { defineTool } from './define.ts';
export type { CallCost, RunnableTool, ToolContext, ToolDefinition } from './define.ts';
export type { Resolution, ResolveRequest, ToolResolver } from './resolve.ts';
export { createToolService } from './service.ts';
export type {
  ToolService,
  ToolServiceOptions,
  StaticToolServiceOptions,
  RegistryToolServiceOptions,
  ToolServiceLimits,
} from './service.ts';
export { TimeoutReason, CancelReason } from './handler.ts';
export { limitsFromConfig } from './limits.ts';
export { createRegistry } from './registry.ts';
export type { Registry, RegistryOptions, RegistryTool } from './registry.ts';
export { buildEnvInSandbox, hostOf, readyEnvRow, urlSecrets } from './env-build.ts';
export type { EnvBuildDeps, EnvBuildJob } from './env-build.ts';
