export { defineTool } from './define.ts';
export type { ToolContext, ToolDefinition } from './define.ts';
export { createToolService } from './service.ts';
export type { ToolService, ToolServiceOptions, ToolServiceLimits } from './service.ts';
export { TimeoutReason, CancelReason } from './execute.ts';
