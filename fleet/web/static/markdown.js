// Proposals as markdown, safely. markdown-it (vendor/, pinned) parses the text into tokens with
// raw HTML off (`html: false`: a <script> in a proposal is text), and this file builds the DOM
// from those tokens itself: nothing is ever assigned to innerHTML, so the Content-Security-Policy
// and the house rule (model text reaches the page as text nodes) both hold. Only the tags below
// are made; a link is a link only when it is http(s) or mailto (markdown-it already refuses
// javascript:, vbscript:, file: and data: links; this checks again), opens in a new tab without
// a referrer; images are shown as their description and address, never fetched.
"use strict";

const MD_TAGS = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "li", "blockquote", "table", "thead", "tbody",
  "tr", "th", "td", "em", "strong", "s", "code", "pre", "hr", "br"]);
const LINK_SCHEMES = new Set(["http:", "https:", "mailto:"]);
let md = null;
let mdLoading = null;

// Loads the library once, when a page first needs it (it is most of the console's script bytes,
// and only a deliberation's page uses it). Resolves either way: without it, text shows as text.
function markdownReady() {
  mdLoading ||= new Promise((resolve) => {
    const s = document.createElement("script");
    s.src = "/static/vendor/markdown-it.min.js";
    s.onload = () => { md = window.markdownit({ html: false, linkify: false, typographer: false }); resolve(); };
    s.onerror = () => resolve();
    document.head.append(s);
  });
  return mdLoading;
}

function safeLink(href) {
  try {
    const u = new URL(href, "https://invalid.example/");
    return LINK_SCHEMES.has(u.protocol) && !href.startsWith("//") && /^[a-z]+:/i.test(href.trim()) ? u.href : null;
  } catch { return null; }
}

// The markdown `text` as a <div class=...> of DOM nodes; without the library, the text in a <pre>.
function markdown(text, cls) {
  const box = el("div", { class: cls });
  if (!md) { box.append(code(text)); return box; }
  appendTokens(box, md.parse(String(text || ""), {}));
  return box;
}

function appendTokens(root, tokens) {
  const stack = [root];
  const top = () => stack[stack.length - 1];
  for (const t of tokens) {
    if (t.nesting === 1) {
      const node = openTag(t);
      top().append(node);
      stack.push(node);
    } else if (t.nesting === -1) {
      if (stack.length > 1) stack.pop();
    } else if (t.type === "inline") {
      appendTokens(top(), t.children || []);
    } else if (t.type === "fence" || t.type === "code_block") {
      const pre = code(t.content);
      if (t.info) pre.dataset.lang = t.info.trim().split(/\s+/)[0];
      top().append(pre);
    } else if (t.type === "code_inline") {
      top().append(el("code", {}, t.content));
    } else if (t.type === "softbreak") {
      top().append("\n");
    } else if (t.type === "hardbreak") {
      top().append(el("br"));
    } else if (t.type === "hr") {
      top().append(el("hr"));
    } else if (t.type === "image") {
      top().append(el("span", { class: "muted" }, `[image: ${t.content || "no description"} ${t.attrGet("src") || ""}]`));
    } else {
      top().append(t.content || ""); // text, and anything else, as text
    }
  }
}

function openTag(t) {
  if (t.type === "link_open") {
    const href = safeLink(t.attrGet("href") || "");
    if (!href) return el("span", { class: "unsafe-link", title: `not a link: ${t.attrGet("href") || ""}` });
    const a = document.createElement("a");
    a.setAttribute("href", href);
    a.setAttribute("rel", "noopener noreferrer nofollow");
    a.setAttribute("target", "_blank");
    return a;
  }
  // Headings step down two levels: a proposal's "# Title" sits under the page's own headings.
  const heading = /^h([1-6])$/.exec(t.tag);
  const tag = heading ? `h${Math.min(6, Number(heading[1]) + 2)}` : t.tag;
  const node = document.createElement(MD_TAGS.has(tag) ? tag : "span");
  if (tag === "ol" && t.attrGet("start")) node.setAttribute("start", String(Number(t.attrGet("start")) || 1));
  return node;
}
