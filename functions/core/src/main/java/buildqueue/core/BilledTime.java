package buildqueue.core;

import java.time.Instant;

/**
 * When the platform billed a task, as its stop evidence says (docs/architecture.md §4.8).
 *
 * @param from the start of billing (Fargate: the image pull's start, else the task's creation);
 *     null: the worker's launch
 * @param to the task's stop; null: the worker's exit as recorded
 */
public record BilledTime(Instant from, Instant to) {}
