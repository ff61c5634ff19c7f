// How many questions a request may ask and how many options or levels a question may have: the
// one place for these counts. Every door's schema (and so /openapi.json), every door's validator
// and the label codes read them from here.

export const QUESTION_LIMITS = Object.freeze({
  /** Questions per request, through every door. */
  maxQuestions: 64,
  /** Options of a choice (and levels of a /v1/decide score): 2 to 255; past 26 the labels are two-token codes. */
  minOptions: 2,
  maxOptions: 255,
  /**
   * Levels of a score through /v1/systemone and /v1/decisions: 2 to 10, those formats' own bound.
   * /v1/decide's score criteria take up to maxOptions levels.
   */
  minLevels: 2,
  maxLevels: 10,
});
