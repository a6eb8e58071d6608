select x.*, b.billed_ms,
       -- The claim comes last, so it takes the bill's cost events with the exit's and the
       -- dispatch's. The exit function claims nothing itself (its limit is 0).
       case when :claimLimit::integer > 0
            then build_outbox_claim(:now::timestamptz, :claimMs::bigint, :claimLimit::integer) end
         as claimed_after_bill
from build_exit_worker_and_dispatch(:taskId::text, :workerId::bigint, :token::uuid, :reason::text,
                                    :maxRecoveries::integer, :repeatedExitError::text,
                                    :maxFailures::integer, :backoffMs::bigint,
                                    :dispatch::boolean, :sharedSlots::integer, :fairShared::boolean,
                                    :newToken::uuid, :leaseMs::bigint,
                                    :claimMs::bigint, 0, :now::timestamptz) x
  -- offset 0 keeps the bill a subquery of its own, run before the claim in the select list.
  cross join lateral (select build_ledger_bill(x.worker_id, :billedFrom::timestamptz, :billedTo::timestamptz, :billingStepMs::bigint, :billingMinMs::bigint, :vcpuMilli::integer, :memoryMb::integer) as billed_ms offset 0) b
