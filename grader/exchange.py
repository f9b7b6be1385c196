"""nbgrader's collect, trusting no learner (``c.ExchangeFactory.collect``, grader/nbgrader_config.py).

nbgrader's exchange is a folder: on a class's JupyterHub every learner may write its ``inbound``,
and a submission's folder name says whose it is. nbgrader's own collect only warns when the folder's
owner is not the learner it names, and copies the folder with ``shutil.copytree``, which follows
symbolic links — with the instructor's rights. This collect keeps nbgrader's exchange and its
selection (the newest submission of each learner, or the newest before the due date), and adds:

- a submission named for a learner who has an account on this machine counts only if that account
  owns its folder: no learner can submit as another (the hub's users are the machine's, through PAM);
  names without an account (a course on one machine, where learners submit with ``--student``) are
  taken as nbgrader takes them;
- it copies only folders and regular files that the submitting account owns: no link, device or
  pipe, and no hard link to a file of someone else's, is followed into the instructor's copy;
- each entry is opened once, without following a link, and its copy is read from what was checked:
  a learner who swaps a file for a link while collect runs gets the link refused, never its target;
  the size limit (nbgrader's ``max_dir_size``) is counted on what is read, not on a walk by path.
"""
import glob
import os
import pwd
import shutil
import stat

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.utils import ignore_patterns


class TrustedCollect(ExchangeCollect):

    def init_src(self):
        super().init_src()  # checks the course and reads the due date; the records are chosen again below
        student = self.coursedir.student_id or "*"
        pattern = os.path.join(self.inbound_path, f"{student}+{self.coursedir.assignment_id}+*")
        by_learner = {}
        for path in glob.glob(pattern):
            record = self._path_to_record(path)
            if self._owned_by_learner(path, record["username"]):
                by_learner.setdefault(record["username"], []).append(record)
        self.src_records = [self._chosen(self._sort_by_timestamp(records)) for records in by_learner.values()]

    def _chosen(self, records):
        if self.duedate is not None and self.before_duedate:
            return next((record for record in records if record["timestamp"] <= self.duedate), records[0])
        return records[0]

    def _owned_by_learner(self, path, learner):
        try:
            account = pwd.getpwnam(learner).pw_uid
        except KeyError:
            return True  # not an account of this machine: a course on one machine
        owner = os.lstat(path).st_uid
        if owner != account:
            self.log.warning("Not collected: %s names %s but belongs to uid %d", os.path.basename(path), learner, owner)
            return False
        return True

    def do_copy(self, src, dest, log=None):
        """nbgrader's copy (its size limit, ignore and include rules), without what is not the
        submitting account's own. The learner can change their folder while it is copied, so each
        entry is opened once, without following a link, and what is checked (``fstat``) is what is
        read: no swap between a check and a copy lets the instructor's rights read another file."""
        nbgrader_rules = ignore_patterns(exclude=self.coursedir.ignore, include=self.coursedir.include,
                                         max_file_size=self.coursedir.max_file_size, log=self.log)
        folder = os.open(src, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        self._left = 1000 * self.coursedir.max_dir_size
        try:
            self._copy_folder(folder, src, dest, os.fstat(folder).st_uid, nbgrader_rules)
        except _TooBig:
            shutil.rmtree(dest)
            raise RuntimeError(f"Directory size is too big. Size is over {1000 * self.coursedir.max_dir_size}, "
                               f"maximum size is {1000 * self.coursedir.max_dir_size}") from None
        finally:
            os.close(folder)

    def _copy_folder(self, folder, path, dest, owner, nbgrader_rules):
        """Copies the open folder ``folder`` (at ``path``) to ``dest``. Copies get the instructor's
        default modes, not the learner's: no set-user-id file of the instructor's is made."""
        os.mkdir(dest)
        names = os.listdir(folder)
        for name in sorted(set(names) - set(nbgrader_rules(path, names))):
            try:  # O_NONBLOCK: opening a pipe does not wait for a writer
                entry = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder)
            except OSError:  # a link (ELOOP), a socket, or gone
                self._not_collected(os.path.join(path, name))
                continue
            try:
                info = os.fstat(entry)
                if info.st_uid != owner or not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
                    self._not_collected(os.path.join(path, name))
                elif stat.S_ISDIR(info.st_mode):
                    self._copy_folder(entry, os.path.join(path, name), os.path.join(dest, name), owner,
                                      nbgrader_rules)
                else:
                    with os.fdopen(entry, "rb", closefd=False) as handle, open(os.path.join(dest, name), "xb") as copy:
                        self._copy_file(handle, copy)
            finally:
                os.close(entry)

    def _copy_file(self, source, copy):
        """Copy what ``source`` holds, counted against the submission's size limit as it is read
        (nbgrader's ``get_size`` walks the folder by path first: a learner racing it could make it fail)."""
        while chunk := source.read(min(1 << 20, self._left + 1)):
            self._left -= len(chunk)
            if self._left < 0:
                raise _TooBig
            copy.write(chunk)

    def _not_collected(self, path):
        self.log.warning("Not collected: %s (a link, a special file, or not the learner's own)", path)


class _TooBig(Exception):
    """A submission over nbgrader's ``max_dir_size``."""
