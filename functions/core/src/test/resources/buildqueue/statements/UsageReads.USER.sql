select (select string_agg(s.capacity || ':' || s.billed || ':' || s.vcpu || ':' || s.mib, ',' order by s.capacity)
 from (select c.capacity, sum(c.billed_ms)::bigint as billed, sum(c.billed_ms * c.vcpu_milli)::bigint as vcpu,
              sum(c.billed_ms * c.memory_mb)::bigint as mib
       from build_job_cost c where c.user_id = :userId and c.at >= :from::timestamptz and c.at < :to::timestamptz group by c.capacity) s) as cost_lines,
       (select count(distinct c.job_id) from build_job_cost c
        where c.user_id = :userId and c.at >= :from::timestamptz and c.at < :to::timestamptz) as jobs
