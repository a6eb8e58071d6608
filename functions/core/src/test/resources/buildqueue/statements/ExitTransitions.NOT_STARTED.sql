select x.*, build_ledger_bill(x.worker_id, :billedFrom::timestamptz, :billedTo::timestamptz, :billingStepMs::bigint, :billingMinMs::bigint, :vcpuMilli::integer, :memoryMb::integer) as billed_ms
from build_exit_worker_before_start(:taskId::text, :workerId::bigint, :token::uuid, :reason::text,
                                    :retryable::boolean, :maxFailures::integer, :backoffMs::bigint,
                                    :now::timestamptz) x
