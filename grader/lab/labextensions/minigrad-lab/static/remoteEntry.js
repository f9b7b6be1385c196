// A JupyterLab extension written by hand, without a build: it imports no JupyterLab package (its
// plugins only use the `app` they are given), so the webpack bundle a built extension ships would
// hold nothing but this. JupyterLab loads this script, then asks the container it registers for
// "./extension" (the module-federation interface: init, get), which gives three plugins.
(function () {
  // The server's answer to GET `path` (under its base URL), as JSON; {} when it says no.
  function request(app, path) {
    const settings = app.serviceManager.serverSettings;
    const headers = settings.token ? { Authorization: `token ${settings.token}` } : {};
    return fetch(`${settings.baseUrl}${path}`, { headers, credentials: "same-origin", cache: "no-store" })
      .then((response) => (response.ok ? response.json() : {}));
  }

  // nbgrader's assignment list turns "(view feedback)" into `filebrowser:go-to-path` on the feedback
  // folder, <assignment>/feedback/<timestamp>, which shows the folder but not the page. When that
  // command has run, this opens each feedback page found there.
  const FEEDBACK_FOLDER = /(^|\/)feedback\/[^/]+\/?$/;

  const openFeedback = {
    id: "minigrad-lab:open-feedback",
    description: "Opens the feedback page when the learner clicks \"view feedback\".",
    autoStart: true,
    activate(app) {
      app.commands.commandExecuted.connect((_, { id, args, result }) => {
        const folder = args && args.path;
        if (id !== "filebrowser:go-to-path" || !FEEDBACK_FOLDER.test(folder || "")) {
          return;
        }
        Promise.resolve(result)
          .then(() => app.serviceManager.contents.get(folder, { content: true }))
          .then((listing) => {
            for (const item of listing.content) {
              if (item.type === "file" && item.name.endsWith(".html")) {
                app.commands.execute("docmanager:open", { path: item.path });
              }
            }
          })
          .catch((error) => console.error("minigrad-lab:", error));
      });
    },
  };

  // nbgrader's Validate dialog says "Success! Your notebook passes all the tests." whenever no
  // visible test fails: untrue where hidden tests run only at grading. The course's Validate
  // (grader/lab/course_validate.py) keeps what it says instead, the visible tests that pass and the
  // hidden checks still to run, at minigrad/validate-summary; when a passing dialog opens, this puts
  // that text in place of nbgrader's sentence, which stays hidden meanwhile.
  const PASSED = "#validation-message.validation-success";

  function summarize(app, message) {
    message.classList.add("minigrad-summary-pending");
    request(app, "minigrad/validate-summary")
      .then(({ summary }) => {
        const sentence = message.querySelector("p");
        if (summary && sentence) {
          sentence.innerText = summary;
        }
      })
      .catch((error) => console.error("minigrad-lab:", error))
      .finally(() => message.classList.add("minigrad-summary"));
  }

  const validateSummary = {
    id: "minigrad-lab:validate-summary",
    description: "Says, when Validate passes, which hidden checks are still to run.",
    autoStart: true,
    activate(app) {
      const style = document.createElement("style");
      // The dialog's boxes are <pre>s, one line each where a line is long (the failing dialog's
      // summary: how many checks fail and the parts not written yet): wrapped, they show it whole.
      style.textContent = `${PASSED}:not(.minigrad-summary) p { visibility: hidden; }
        #validation-message pre { white-space: pre-wrap; overflow-wrap: anywhere; }`;
      document.head.appendChild(style);
      new MutationObserver(() => {
        for (const message of document.querySelectorAll(`${PASSED}:not(.minigrad-summary-pending)`)) {
          summarize(app, message);
        }
      }).observe(document.body, { childList: true, subtree: true });
    },
  };

  // nbgrader's Assignment List fetches an exercise into the learner's folder and lists it as fetched,
  // while the file browser stays where it was (course/, where the lab opens) and nothing opens. When
  // an exercise whose Fetch was clicked shows up as fetched, this opens its notebook (the path
  // nbgrader's list gives) and shows it in the file browser.
  const openFetched = {
    id: "minigrad-lab:open-fetched",
    description: "Opens the notebook of an exercise the learner fetches, and shows it in the file browser.",
    autoStart: true,
    activate(app) {
      const fetching = new Set(); // "course assignment" of each Fetch clicked, until it is listed as fetched
      const key = (row) => ["item_course", "item_name"].map((name) => row.querySelector(`.${name}`).innerText.trim()).join(" ");
      document.addEventListener("click", (event) => {
        const button = event.target.closest && event.target.closest("#released_assignments_list button");
        if (button && button.innerText.trim() === "Fetch") {
          fetching.add(key(button.closest(".list_item")));
        }
      }, true);
      new MutationObserver(() => {
        for (const link of document.querySelectorAll("#fetched_assignments_list .assignment-notebooks-link")) {
          const row = link.closest(".list_item");
          if (fetching.delete(key(row))) {
            const [course, assignment] = key(row).split(" ");
            open(app, course, assignment);
          }
        }
      }).observe(document.body, { childList: true, subtree: true });
    },
  };

  function open(app, course, assignment) {
    request(app, `assignments?course_id=${encodeURIComponent(course)}`)
      .then(({ value }) => {
        const fetched = (value || []).find((item) => item.assignment_id === assignment && item.status === "fetched");
        const notebook = fetched && fetched.notebooks[0];
        if (notebook) {
          app.commands.execute("filebrowser:go-to-path", { path: notebook.path });
          app.commands.execute("docmanager:open", { path: notebook.path });
        }
      })
      .catch((error) => console.error("minigrad-lab:", error));
  }

  const container = {
    init() {},
    get(module) {
      if (module !== "./extension") {
        return Promise.reject(new Error(`Module "${module}" does not exist in container.`));
      }
      return Promise.resolve(() => ({ __esModule: true, default: [openFeedback, validateSummary, openFetched] }));
    },
  };
  (window._JUPYTERLAB = window._JUPYTERLAB || {})["minigrad-lab"] = container;
})();
