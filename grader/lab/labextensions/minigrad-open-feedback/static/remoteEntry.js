// A JupyterLab extension written by hand, without a build: it imports no JupyterLab package (it
// only uses the `app` its plugin is given), so the webpack bundle a built extension ships would
// hold nothing but this. JupyterLab loads this script, then asks the container it registers for
// "./extension" (the module-federation interface: init, get).
//
// nbgrader's assignment list turns "(view feedback)" into `filebrowser:go-to-path` on the feedback
// folder, <assignment>/feedback/<timestamp>, which shows the folder but not the page. When that
// command has run, this opens each feedback page found there.
(function () {
  const FEEDBACK_FOLDER = /(^|\/)feedback\/[^/]+\/?$/;

  const plugin = {
    id: "minigrad-open-feedback:plugin",
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
          .catch((error) => console.error("minigrad-open-feedback:", error));
      });
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
  (window._JUPYTERLAB = window._JUPYTERLAB || {})["minigrad-open-feedback"] = container;
})();
