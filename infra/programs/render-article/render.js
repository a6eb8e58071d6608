// A sample build program for the render-article kind (infra/kinds/kinds.json): renders an article's
// pages to HTML files, one page at a time. It shows all a program needs to know about buildqueue:
// read the payload from the file $BUILDQUEUE_PAYLOAD, resume after $BUILDQUEUE_PROGRESS, print a
// log for people, and tell the queue its progress or its error by appending JSON lines to
// $BUILDQUEUE_CONTROL. Exit 0 is success; exit 75 asks for a retry (the kind's retryExitCodes).
"use strict";
const fs = require("fs");

const payload = JSON.parse(fs.readFileSync(process.env.BUILDQUEUE_PAYLOAD, "utf8"));
const control = (message) => fs.appendFileSync(process.env.BUILDQUEUE_CONTROL, JSON.stringify(message) + "\n");
const done = Number(process.env.BUILDQUEUE_PROGRESS || "0");
const pages = payload.pages;

console.log(`rendering article ${payload.articleId}: ${pages} pages, attempt ${process.env.BUILDQUEUE_ATTEMPT}`);
if (done > 0) {
  console.log(`resuming after page ${done}`);
}
for (let page = done + 1; page <= pages; page++) {
  if (payload.title === undefined || payload.title.trim() === "") {
    control({ error: "the article has no title; give it one and submit again" });
    process.exit(1);
  }
  const html = `<html><head><title>${payload.title}</title></head><body>page ${page} of ${pages}</body></html>\n`;
  fs.writeFileSync(`page-${page}.html`, html);
  console.log(`page ${page} of ${pages}: ${html.length} bytes`);
  control({ progress: page });
}
console.log("done");
