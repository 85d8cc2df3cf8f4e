// The replay debugger's own part of DAP: its debug type, and the custom
// events and requests it adds, each name with its body's type (as
// src/server/protocol.ts's Methods does for the LSP side). The adapter sends
// and answers them; the extension and the tests read them. No vscode import.
import { z } from 'zod';

/** The `type` of an ExecVerify launch configuration, and of its debug sessions. */
export const DEBUG_TYPE = 'execverify';

/** Body of the `execverify/step` event, sent after every `stopped` event. */
export const StepEventBodySchema = z.object({
  stepIndex: z.number().int().nonnegative(),
  /** DAP id of the top frame. */
  frameId: z.number().int(),
  line: z.number().int(),
  file: z.string(),
  /** 1-based run of this line in the recording, when the step is a line event. */
  run: z.number().int().optional(),
  runs: z.number().int().optional(),
});
export type StepEventBody = z.infer<typeof StepEventBodySchema>;

/** Custom events: name → body. */
export const DapEvents = {
  step: 'execverify/step',
} as const;
export interface DapEventBodies {
  [DapEvents.step]: StepEventBody;
}

/** Custom requests: name → arguments and response body. */
export const DapRequests = {
  /** Moves the cursor to any recorded step (the panel's selected row). */
  jumpToStep: 'execverify/jumpToStep',
  /** Describes the loaded recording; `full: true` adds the whole trace. */
  trace: 'execverify/trace',
} as const;
export interface DapRequestTypes {
  [DapRequests.jumpToStep]: { args: { stepIndex: number }; body: undefined };
  [DapRequests.trace]: { args: { full?: boolean }; body: Record<string, unknown> };
}
