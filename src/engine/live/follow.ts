// What a DebugAdapterTracker sees of somebody else's session — the requests
// the editor sends and the messages the adapter sends back — turned into the
// live step's calls: which thread is stopped (where "Predict next step" can
// ask), how the session was resumed (LiveTransition.resumed), where it
// stopped next (LiveTransition.stopped). The editor's tracker only forwards
// messages here; the adapter is any adapter, so its messages are data.
import { z } from 'zod';
import type { Resume } from './transition';

const RequestSchema = z.object({
  type: z.literal('request'),
  command: z.string(),
  arguments: z.object({ threadId: z.number().int().optional() }).passthrough().optional(),
});
const StoppedSchema = z.object({
  type: z.literal('event'),
  event: z.literal('stopped'),
  body: z.object({ reason: z.string(), threadId: z.number().int().optional(), allThreadsStopped: z.boolean().optional() }).passthrough(),
});
const EndedSchema = z.object({ type: z.literal('event'), event: z.enum(['terminated', 'exited']) });

/** The requests that resume a stopped session; any other request leaves it stopped. */
const RESUMES = new Map<string, Resume>([
  ['next', 'next'],
  ['stepIn', 'stepIn'],
  ['stepOut', 'stepOut'],
  ['continue', 'continue'],
  ['reverseContinue', 'other'],
  ['stepBack', 'other'],
  ['goto', 'other'],
  ['restartFrame', 'other'],
  ['restart', 'other'],
]);

export interface FollowEvents {
  resumed(how: Resume): void;
  stopped(threadId: number, reason: string): void;
  ended(): void;
}

export class LiveFollower {
  private stoppedThread: number | undefined;
  /** The thread last stopped or resumed: a stop that names none is on it. */
  private lastThread = 1;

  constructor(private readonly on: FollowEvents) {}

  /** The thread the session is stopped on now, if it is stopped. */
  current(): { threadId: number } | undefined {
    return this.stoppedThread === undefined ? undefined : { threadId: this.stoppedThread };
  }

  /** A message the editor sends to the adapter (the tracker's onWillReceiveMessage). */
  willReceive(message: unknown): void {
    const r = RequestSchema.safeParse(message);
    if (!r.success) return;
    const how = RESUMES.get(r.data.command);
    if (!how) return;
    this.lastThread = r.data.arguments?.threadId ?? this.lastThread;
    this.stoppedThread = undefined;
    this.on.resumed(how);
  }

  /** A message the adapter sends (the tracker's onDidSendMessage). */
  didSend(message: unknown): void {
    const stopped = StoppedSchema.safeParse(message);
    if (stopped.success) {
      // An adapter may leave threadId out (every thread stopped): the stop is on the thread it last ran.
      this.stoppedThread = this.lastThread = stopped.data.body.threadId ?? this.lastThread;
      this.on.stopped(this.stoppedThread, stopped.data.body.reason);
      return;
    }
    if (EndedSchema.safeParse(message).success) {
      this.stoppedThread = undefined;
      this.on.ended();
    }
  }
}
