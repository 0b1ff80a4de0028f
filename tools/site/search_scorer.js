/* The website's search scorer (conf.py's html_search_scorer): Sphinx's default weights
   (its searchtools.js), plus one rule. A result of kind "title" is a page or section whose
   title contains the whole query (Sphinx scores it up to 16); a result of kind "text" scores
   15 as soon as one word of the query is in any heading of the page. Adding the title
   weight to the first ranks "6. Padding masks" above "2. Causal masking" for "padding mask". */
var Scorer = {
  score: (result) => {
    const [, , , , score, , kind] = result;
    return kind === "title" ? score + Scorer.title : score;
  },
  // query matches the full name of an object
  objNameMatch: 11,
  // or matches in the last dotted part of the object name
  objPartialMatch: 6,
  // additive scores depending on the priority of the object
  objPrio: {0: 15, 1: 5, 2: -5},
  // used when the priority is not in the mapping
  objPrioDefault: 0,
  // query found in a title
  title: 15,
  partialTitle: 7,
  // query found in the text
  term: 5,
  partialTerm: 2,
};
