// A JupyterLab extension written by hand, without a build (as minigrad-open-feedback: it imports no
// JupyterLab package, only uses the `app` its plugin is given).
//
// nbgrader's Validate dialog (its lab extension) says "Success! Your notebook passes all the tests."
// whenever no visible test fails: untrue where hidden tests run only at grading. The course's
// Validate (grader/lab/course_validate.py) keeps what it would say instead, the visible tests that
// pass and the hidden checks still to run, at minigrad/validate-summary; when a passing dialog
// opens, this puts that text in place of nbgrader's sentence, which stays hidden meanwhile.
(function () {
  const PASSED = "#validation-message.validation-success";

  const style = document.createElement("style");
  style.textContent = `${PASSED}:not(.minigrad-summary) p { visibility: hidden; }`;

  function summarize(app, message) {
    message.classList.add("minigrad-summary-pending");
    const settings = app.serviceManager.serverSettings;
    const headers = settings.token ? { Authorization: `token ${settings.token}` } : {};
    fetch(`${settings.baseUrl}minigrad/validate-summary`, { headers, credentials: "same-origin", cache: "no-store" })
      .then((response) => (response.ok ? response.json() : {}))
      .then(({ summary }) => {
        const sentence = message.querySelector("p");
        if (summary && sentence) {
          sentence.innerText = summary;
        }
      })
      .catch((error) => console.error("minigrad-validate-summary:", error))
      .finally(() => message.classList.add("minigrad-summary"));
  }

  const plugin = {
    id: "minigrad-validate-summary:plugin",
    description: "Says, when Validate passes, which hidden checks are still to run.",
    autoStart: true,
    activate(app) {
      document.head.appendChild(style);
      new MutationObserver(() => {
        for (const message of document.querySelectorAll(`${PASSED}:not(.minigrad-summary-pending)`)) {
          summarize(app, message);
        }
      }).observe(document.body, { childList: true, subtree: true });
    },
  };

  const container = {
    init() {},
    get(module) {
      if (module !== "./extension") {
        return Promise.reject(new Error(`Module "${module}" does not exist in container.`));
      }
      return Promise.resolve(() => ({ __esModule: true, default: [plugin] }));
    },
  };
  (window._JUPYTERLAB = window._JUPYTERLAB || {})["minigrad-validate-summary"] = container;
})();
