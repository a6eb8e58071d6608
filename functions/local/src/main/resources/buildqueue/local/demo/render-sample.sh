#!/bin/sh
# A sample build for `serve --demo`: renders {"pages": n} pages, one a second, the way a real
# build program talks to buildqueue — plain output for people, JSON lines in $BUILDQUEUE_CONTROL
# for the queue. It resumes where an interrupted attempt got to ($BUILDQUEUE_PROGRESS).
set -eu

pages=$(sed -n 's/.*"pages": *\([0-9][0-9]*\).*/\1/p' "$BUILDQUEUE_PAYLOAD")
pages=${pages:-5}
fail_at=$(sed -n 's/.*"failAtPage": *\([0-9][0-9]*\).*/\1/p' "$BUILDQUEUE_PAYLOAD")
done_pages=${BUILDQUEUE_PROGRESS:-0}

echo "job $BUILDQUEUE_JOB_ID for $BUILDQUEUE_USER_ID, attempt $BUILDQUEUE_ATTEMPT: $pages pages"
if [ "$done_pages" -gt 0 ]; then
  echo "resuming after page $done_pages"
fi

page=$((done_pages + 1))
while [ "$page" -le "$pages" ]; do
  if [ -n "$fail_at" ] && [ "$page" -eq "$fail_at" ]; then
    echo "page $page: the template is missing a title" >&2
    echo '{"error": "page '"$page"' has no title; add one and submit again"}' >> "$BUILDQUEUE_CONTROL"
    exit 1
  fi
  echo "rendering page $page of $pages"
  sleep 1
  printf '<html><body>page %s</body></html>\n' "$page" > "page-$page.html"
  echo '{"progress": '"$page"'}' >> "$BUILDQUEUE_CONTROL"
  page=$((page + 1))
done

echo "done: $pages pages, $(ls page-*.html | wc -l | tr -d " ") of them rendered by this attempt"
